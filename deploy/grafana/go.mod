module github.com/rdmabench/rdmabench/deploy/grafana

go 1.26.8

require github.com/grafana/grafana-foundation-sdk/go v0.0.22
