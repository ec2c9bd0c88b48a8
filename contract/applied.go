package contract

// AppliedAnnotation is the annotation of its own pod in which the
// config-reloader reports what Prometheus runs, as an Applied in JSON. It
// is how the controller learns it per replica: the sidecar already talks
// to the API server, needs only "patch" on its StatefulSet's pod names, and
// the controller reads it with the pods it watches anyway, with no port to
// scrape and no extra process.
const AppliedAnnotation = "podreload.dev/applied"

// Applied is the value of AppliedAnnotation.
type Applied struct {
	// Hash is the content hash (Sum) of the configuration and rule files
	// Prometheus last accepted; empty before it accepted any.
	Hash string `json:"hash"`
	// Time is when it accepted them, RFC 3339 in UTC; empty with Hash.
	Time string `json:"time,omitempty"`
	// Rejection is Prometheus' refusal of newer content, absent when it
	// runs the current content.
	Rejection *Rejection `json:"rejection,omitempty"`
}

// Rejection is a reload Prometheus refused.
type Rejection struct {
	// Message is Prometheus' explanation, cut to 4 KiB.
	Message string `json:"message"`
	// Time is when it refused, RFC 3339 in UTC.
	Time string `json:"time"`
}
