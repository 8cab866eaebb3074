package report

// What the tests of package report_test see of this package's internals.

// CheckShape is checkShape.
var CheckShape = checkShape

// SettingNamed is e's setting called name, as String writes it, and
// whether e has one.
func SettingNamed(e *Effective, name string) (string, bool) {
	for _, s := range e.settings() {
		if s.name == name {
			return s.String(), true
		}
	}
	return "", false
}
