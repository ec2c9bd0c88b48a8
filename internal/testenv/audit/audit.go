// Package audit is for tests only: the events of a kube-apiserver's JSON
// audit log (--audit-log-format=json), as the tests that count who wrote
// what read them.
package audit

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is what the tests read of an audit event.
type Event struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// ResponseObject is the object answered, when the audit policy's
	// level for the request is RequestResponse.
	ResponseObject json.RawMessage  `json:"responseObject"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// Succeeded reports whether the API server did what the request asked.
func (e *Event) Succeeded() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code < 300
}

// Read returns the events of the audit log file path about objects of
// namespace ns. A last line the API server is still writing is left out.
func Read(t testing.TB, path, ns string) []Event {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "the API server's audit log")
	defer f.Close()
	dec := json.NewDecoder(f)
	var out []Event
	for {
		var e Event
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out
		}
		require.NoError(t, err)
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns {
			out = append(out, e)
		}
	}
}
