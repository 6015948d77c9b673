package trackerapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// FuzzDecodeMessages checks that any body is either a list of messages, one
// per array element, or a 400; that no accepted message holds two names
// equal but for case (issue 15); and that judging a decoded message never
// panics. The seed corpus is in testdata/fuzz/FuzzDecodeMessages.
func FuzzDecodeMessages(f *testing.F) {
	f.Add([]byte(`[{"id":1,"type":"LINK","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","objectKey":"PROJ-1","relationship":"implements"}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, err := decodeMessages(body)
		if err != nil {
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		var raws []json.RawMessage
		if !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) || json.Unmarshal(body, &raws) != nil || len(raws) != len(msgs) {
			t.Fatalf("accepted %q as %d messages", body, len(msgs))
		}
		if len(msgs) > tracker.MaxBatch {
			t.Fatalf("accepted %d messages", len(msgs))
		}
		for i, raw := range raws { // the top-level names of each message
			dec := json.NewDecoder(bytes.NewReader(raw))
			if _, err := dec.Token(); err != nil {
				t.Fatalf("message %d of %q: %v", i, body, err)
			}
			var names []string
			for dec.More() {
				tok, err := dec.Token()
				name, _ := tok.(string)
				var value json.RawMessage
				if err != nil || dec.Decode(&value) != nil {
					t.Fatalf("message %d of %q: %v", i, body, err)
				}
				for _, prev := range names {
					if strings.EqualFold(prev, name) {
						t.Fatalf("accepted %q: message %d has %q and %q", body, i, prev, name)
					}
				}
				names = append(names, name)
			}
		}
		for _, m := range msgs {
			if err := m.Validate("wiki-1"); err != nil && apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("Validate: %v is not a 400", err)
			}
			_ = m.Fingerprint()
		}
	})
}
