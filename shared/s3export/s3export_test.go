package s3export_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/s3export"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fetch GETs a presigned URL without credentials.
func fetch(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestSaveSizes stores an export smaller than a part (one PutObject) and
// one of several parts (a multipart upload written 64 KiB at a time), and
// reads both back through their presigned URLs.
func TestSaveSizes(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	client := s3.NewFromConfig(env.Config)
	store := s3export.New(client, env.ExportBucket)
	store.PartSize = 5 << 20 // S3's smallest part
	for _, size := range []int{0, 1000, 12<<20 + 7} {
		content := bytes.Repeat([]byte("0123456789abcdef\r\n"), size/18+1)[:size]
		url, err := store.Save(context.Background(), "demo", "x.csv", "text/csv; charset=utf-8", func(w io.Writer) error {
			for rest := content; len(rest) > 0; {
				n := min(len(rest), 64<<10)
				if _, err := w.Write(rest[:n]); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !strings.Contains(url, "/exports/demo/") || !strings.HasSuffix(strings.SplitN(url, "?", 2)[0], "/x.csv") {
			t.Errorf("%d bytes: url %s", size, url)
		}
		resp, body := fetch(t, url)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
			t.Fatalf("%d bytes: GET %d, %d bytes back", size, resp.StatusCode, len(body))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Errorf("%d bytes: content type %q", size, ct)
		}
		if cd := resp.Header.Get("Content-Disposition"); cd != "attachment; filename=x.csv" {
			t.Errorf("%d bytes: content disposition %q", size, cd)
		}
	}
}

// TestSaveFailure checks that a write that fails, before or after parts
// went up, stores nothing and leaves no upload open; its error comes back
// as it is.
func TestSaveFailure(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	client := s3.NewFromConfig(env.Config)
	store := s3export.New(client, env.ExportBucket)
	store.PartSize = 5 << 20
	boom := errors.New("boom")
	for _, before := range []int{0, 11 << 20} {
		_, err := store.Save(context.Background(), "demo", "x.csv", "text/csv", func(w io.Writer) error {
			if _, err := w.Write(make([]byte, before)); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("after %d bytes: %v, want boom", before, err)
		}
	}
	objects, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(env.ExportBucket)})
	if err != nil || len(objects.Contents) != 0 {
		t.Fatalf("objects after failed exports: %v (%v)", objects.Contents, err)
	}
	uploads, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(env.ExportBucket)})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Fatalf("uploads left open: %v (%v)", uploads.Uploads, err)
	}
}
