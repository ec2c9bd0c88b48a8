package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// auditPolicy logs every write request, with its body, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// auditFlags are the kube-apiserver flags that write the audit log of
// auditPolicy into dir, and the path of the log.
func auditFlags(b *testing.B, dir string) (map[string]string, string) {
	policy, log := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	must(b, os.WriteFile(policy, []byte(auditPolicy), 0o600))
	return map[string]string{"audit-policy-file": policy, "audit-log-path": log, "audit-log-format": "json", "audit-log-mode": "blocking"}, log
}

// auditEvent is what BenchmarkScale reads of an audit event.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	StageTimestamp time.Time       `json:"stageTimestamp"`
}

// auditWrites reads the write requests of the audit log at path that
// completed since since and that match.
func auditWrites(b *testing.B, path string, since time.Time, match func(auditEvent) bool) []auditEvent {
	f, err := os.Open(path)
	must(b, err)
	defer f.Close()
	var out []auditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var e auditEvent
		must(b, json.Unmarshal(s.Bytes(), &e))
		if e.Stage == "ResponseComplete" && !e.StageTimestamp.Before(since) && match(e) {
			out = append(out, e)
		}
	}
	must(b, s.Err())
	return out
}

// auditSummary counts writes: by resource, verb and response code, with
// the bytes of their bodies, and the successful ones and the 409s.
type auditSummary struct {
	by        map[string]int
	bytes     map[string]int
	ok, c409  int
	bodyBytes int
}

func summarize(events []auditEvent) auditSummary {
	s := auditSummary{by: map[string]int{}, bytes: map[string]int{}}
	for _, e := range events {
		r := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			r += "/" + e.ObjectRef.Subresource
		}
		key := fmt.Sprintf("%s %s %d", r, e.Verb, e.ResponseStatus.Code)
		s.by[key]++
		s.bytes[key] += len(e.RequestObject)
		s.bodyBytes += len(e.RequestObject)
		switch {
		case e.ResponseStatus.Code == 409:
			s.c409++
		case e.ResponseStatus.Code < 300:
			s.ok++
		}
	}
	return s
}

func (s auditSummary) String() string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.by {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s: %d (%.1f KB)", k, s.by[k], float64(s.bytes[k])/1e3))
	}
	return fmt.Sprintf("%d write requests, %d succeeded, %d refused with 409, %.1f KB of bodies; %s",
		s.total(), s.ok, s.c409, float64(s.bodyBytes)/1e3, strings.Join(parts, ", "))
}

func (s auditSummary) total() int {
	n := 0
	for _, c := range s.by {
		n += c
	}
	return n
}

// byUserAgent matches the requests of a client whose user agent starts
// with name and a slash.
func byUserAgent(name string) func(auditEvent) bool {
	return func(e auditEvent) bool { return strings.HasPrefix(e.UserAgent, name+"/") }
}

// byUser matches the requests of a user.
func byUser(name string) func(auditEvent) bool {
	return func(e auditEvent) bool { return e.User.Username == name }
}

// settleAudit waits until the writes matching match have not changed for
// a second, and returns them since since.
func settleAudit(b *testing.B, path string, since time.Time, match func(auditEvent) bool) []auditEvent {
	b.Helper()
	deadline := time.NewTimer(scaleDeadline)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last []auditEvent
	stable := time.Now()
	for {
		now := auditWrites(b, path, since, match)
		if len(now) != len(last) {
			last, stable = now, time.Now()
		} else if time.Since(stable) >= time.Second {
			return now
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			b.Fatalf("the writes did not settle within %v", scaleDeadline)
		}
	}
}
