package httpapi

import (
	"bytes"

	"github.com/gin-gonic/gin"
)

// captureWriter copies what a handler writes, up to limit bytes, so that the
// idempotency middleware can store the answer for replay. The caller still
// gets every byte as it is written. Beyond limit the copy is dropped and the
// answer is not stored (a retry runs again) rather than held in memory.
type captureWriter struct {
	gin.ResponseWriter
	buf   bytes.Buffer
	limit int
	over  bool
}

func (w *captureWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.capture(b[:n])
	return n, err
}

func (w *captureWriter) WriteString(s string) (int, error) {
	n, err := w.ResponseWriter.WriteString(s)
	w.capture([]byte(s[:n]))
	return n, err
}

func (w *captureWriter) capture(b []byte) {
	if w.over {
		return
	}
	if w.buf.Len()+len(b) > w.limit {
		w.over = true
		w.buf = bytes.Buffer{}
		return
	}
	w.buf.Write(b)
}
