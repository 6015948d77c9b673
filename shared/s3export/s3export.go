// Package s3export keeps exports (shared/export) in an S3 bucket and hands
// out presigned GET URLs to them. An export is written while it is
// produced: parts of PartSize bytes go up as a multipart upload, so memory
// holds one part whatever the export's size; an export smaller than one
// part is one PutObject. The bucket's lifecycle rule (template.yaml) deletes
// exports after a day, and aborts uploads a crash left unfinished.
//
// Object keys are exports/<tenant>/<date>/<random>/<name>: the random part
// (128 bits) makes a URL unguessable, and the presigned URL, valid for
// URLTTL, is the only way in (the bucket blocks public access).
package s3export

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/reqtrace/reqtrace/shared/export"
)

// API is the part of the S3 client the store uses.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// Store implements export.Store on one bucket.
type Store struct {
	api     API
	presign *s3.PresignClient
	bucket  string
	// PartSize is the size of each part of a multipart upload (S3's
	// minimum is 5 MiB): the memory an export takes.
	PartSize int
	// URLTTL is how long a download URL stays valid.
	URLTTL time.Duration
	now    func() time.Time
}

var _ export.Store = (*Store)(nil)

// New returns a Store on bucket.
func New(client *s3.Client, bucket string) *Store {
	return &Store{api: client, presign: s3.NewPresignClient(client), bucket: bucket, PartSize: 8 << 20, URLTTL: 15 * time.Minute, now: time.Now}
}

// Save implements export.Store.
func (s *Store) Save(ctx context.Context, tenant, name, contentType string, write func(io.Writer) error) (string, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("export id: %w", err)
	}
	key := "exports/" + tenant + "/" + s.now().UTC().Format("2006-01-02") + "/" + hex.EncodeToString(id) + "/" + name
	u := &upload{ctx: ctx, s: s, key: key, contentType: contentType,
		disposition: mime.FormatMediaType("attachment", map[string]string{"filename": name})}
	if err := write(u); err != nil {
		u.abort()
		return "", err
	}
	if u.err != nil {
		u.abort()
		return "", u.err
	}
	if err := u.finish(); err != nil {
		u.abort()
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key},
		s3.WithPresignExpires(s.URLTTL))
	if err != nil {
		return "", fmt.Errorf("presign export: %w", err)
	}
	return req.URL, nil
}

// upload is an io.Writer into one object: a buffer of up to PartSize
// bytes, then the parts of a multipart upload.
type upload struct {
	ctx         context.Context
	s           *Store
	key         string
	contentType string
	disposition string
	buf         bytes.Buffer
	id          *string
	parts       []types.CompletedPart
	err         error
}

func (u *upload) Write(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	u.buf.Write(p)
	if u.buf.Len() >= u.s.PartSize {
		if u.err = u.part(); u.err != nil {
			return 0, u.err
		}
	}
	return len(p), nil
}

// part uploads the buffer as the next part, starting the multipart upload
// first if needed.
func (u *upload) part() error {
	if u.id == nil {
		out, err := u.s.api.CreateMultipartUpload(u.ctx, &s3.CreateMultipartUploadInput{
			Bucket: &u.s.bucket, Key: &u.key, ContentType: &u.contentType, ContentDisposition: &u.disposition,
		})
		if err != nil {
			return fmt.Errorf("start export upload: %w", err)
		}
		u.id = out.UploadId
	}
	n := int32(len(u.parts) + 1)
	out, err := u.s.api.UploadPart(u.ctx, &s3.UploadPartInput{
		Bucket: &u.s.bucket, Key: &u.key, UploadId: u.id, PartNumber: &n, Body: bytes.NewReader(u.buf.Bytes()),
		ContentLength: aws.Int64(int64(u.buf.Len())),
	})
	if err != nil {
		return fmt.Errorf("upload export part %d: %w", n, err)
	}
	u.parts = append(u.parts, types.CompletedPart{ETag: out.ETag, PartNumber: &n})
	u.buf.Reset()
	return nil
}

// finish stores what is left: one PutObject when no part went up, else
// the last part and the completion.
func (u *upload) finish() error {
	if u.id == nil {
		_, err := u.s.api.PutObject(u.ctx, &s3.PutObjectInput{
			Bucket: &u.s.bucket, Key: &u.key, ContentType: &u.contentType, ContentDisposition: &u.disposition,
			Body: bytes.NewReader(u.buf.Bytes()), ContentLength: aws.Int64(int64(u.buf.Len())),
		})
		if err != nil {
			return fmt.Errorf("store export: %w", err)
		}
		return nil
	}
	if u.buf.Len() > 0 {
		if err := u.part(); err != nil {
			return err
		}
	}
	_, err := u.s.api.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &u.s.bucket, Key: &u.key, UploadId: u.id, MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts},
	})
	if err != nil {
		return fmt.Errorf("complete export upload: %w", err)
	}
	return nil
}

// abort cancels a multipart upload that was started (the lifecycle rule
// cleans up after one whose abort fails too).
func (u *upload) abort() {
	if u.id == nil {
		return
	}
	ctx := context.WithoutCancel(u.ctx)
	_, err := u.s.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.s.bucket, Key: &u.key, UploadId: u.id})
	if err != nil {
		u.err = errors.Join(u.err, err)
	}
}
