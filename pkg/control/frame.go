package control

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrame is the default limit on a frame's body, in bytes.
const DefaultMaxFrame = 1 << 20

// headerSize is the length prefix's size.
const headerSize = 4

func maxOrDefault(max int) int {
	if max <= 0 {
		return DefaultMaxFrame
	}
	return min(max, math.MaxUint32)
}

// EncodeFrame returns m as a frame: a 4-byte big-endian length and the JSON
// object. A body over max bytes (0: DefaultMaxFrame) is ErrFrameTooLarge; an
// unknown type or a message missing a required field is ErrBadFrame.
func EncodeFrame(m *Message, max int) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	max = maxOrDefault(max)
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if len(body) > max {
		return nil, fmt.Errorf("%w: %s message of %d bytes, the limit is %d", ErrFrameTooLarge, m.Type, len(body), max)
	}
	b := make([]byte, headerSize, headerSize+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	return append(b, body...), nil
}

// WriteFrame writes m as one frame to w. Set the connection's write
// deadline first.
func WriteFrame(w io.Writer, m *Message, max int) error {
	b, err := EncodeFrame(m, max)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadFrame reads one frame from r. The declared length is checked against
// max (0: DefaultMaxFrame) before anything is allocated for the body, and the
// body buffer grows only as bytes actually arrive. The end of r before a
// frame is io.EOF; inside one, io.ErrUnexpectedEOF. Set the connection's
// read deadline first.
func ReadFrame(r io.Reader, max int) (*Message, error) {
	max = maxOrDefault(max)
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(h[:]))
	if err := checkLen(n, max); err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(n, 4096)))
	if _, err := io.CopyN(buf, r, n); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return decodeBody(buf.Bytes())
}

// DecodeFrame decodes exactly one whole frame (length and body) from b.
func DecodeFrame(b []byte, max int) (*Message, error) {
	max = maxOrDefault(max)
	if len(b) < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a frame header", ErrBadFrame, len(b))
	}
	n := int64(binary.BigEndian.Uint32(b))
	if err := checkLen(n, max); err != nil {
		return nil, err
	}
	if int64(len(b)-headerSize) != n {
		return nil, fmt.Errorf("%w: %d bytes declared, %d present", ErrBadFrame, n, len(b)-headerSize)
	}
	return decodeBody(b[headerSize:])
}

func checkLen(n int64, max int) error {
	if n == 0 {
		return fmt.Errorf("%w: zero length", ErrBadFrame)
	}
	if n > int64(max) {
		return fmt.Errorf("%w: %d bytes declared, the limit is %d", ErrFrameTooLarge, n, max)
	}
	return nil
}

// decodeBody decodes a frame's JSON object and checks its type and
// required fields.
func decodeBody(body []byte) (*Message, error) {
	if !jsonObject(body) {
		return nil, fmt.Errorf("%w: not a JSON object", ErrBadFrame)
	}
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// jsonObject tells whether body starts as a JSON object does (after
// white space).
func jsonObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
