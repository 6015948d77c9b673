package trackerapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// FuzzDecodeMessages checks that any body is either a list of messages, one
// per array element, or a 400; and that judging a decoded message never
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
		for _, m := range msgs {
			if err := m.Validate("wiki-1"); err != nil && apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("Validate: %v is not a 400", err)
			}
			_ = m.Fingerprint()
		}
	})
}
