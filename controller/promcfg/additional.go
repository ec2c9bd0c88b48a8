package promcfg

import (
	"errors"
	"fmt"
	"strings"

	"github.com/podreload/podreload/controller/promcfg/relabeling"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
)

// additionalJobs returns the scrape jobs of spec.additionalScrapeConfigs,
// which follow the generated jobs, with the sharding relabelings of
// appendSharding added to each job without a hashmod relabeling of its own
// (prometheus-operator's rule).
//
// The controller checks what it can without Prometheus' configuration
// loader: a list of mappings, a job_name each, unique among all the jobs,
// and relabelings Prometheus' relabel package accepts (the commonest
// mistakes). The loader itself is not linked in: it brings Prometheus'
// remote write authentication (the AWS, Azure and Google SDKs, some 300
// packages), and it would still refuse every service discovery not
// registered in the controller (ec2_sd_configs...) that the user's
// Prometheus has. The Prometheus that loads the configuration checks the
// rest, with its own version's rules: when it rejects it, the
// config-reloader keeps what it runs on disk, and condition ConfigApplied
// says Rejected with Prometheus' message.
func (r *renderer) additionalJobs(generated []string) ([]yaml.MapSlice, error) {
	sel := r.srv.Spec.AdditionalScrapeConfigs
	if sel == nil {
		return nil, nil
	}
	path := "spec.additionalScrapeConfigs"
	text, err := r.cred.Secret(r.srv.Namespace, *sel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	path = fmt.Sprintf("%s: secret %q key %q", path, r.srv.Namespace+"/"+sel.Name, sel.Key)
	var jobs []yaml.MapSlice
	if err := yaml.Unmarshal([]byte(text), &jobs); err != nil {
		return nil, fmt.Errorf("%s: not a list of scrape configurations: %w", path, err)
	}
	names := make(map[string]bool, len(generated)+len(jobs))
	for _, name := range generated {
		names[name] = true
	}
	for i, job := range jobs {
		name, err := checkAdditionalJob(job, names)
		switch {
		case err != nil && name != "":
			return nil, fmt.Errorf("%s: job %d %q: %w", path, i, name, err)
		case err != nil:
			return nil, fmt.Errorf("%s: job %d: %w", path, i, err)
		}
		names[name] = true
		if jobs[i], err = normalizeYAML(job); err != nil {
			return nil, fmt.Errorf("%s: job %d %q: %w", path, i, name, err)
		}
		jobs[i] = shardAdditionalJob(jobs[i], r.shards)
	}
	return jobs, nil
}

// additionalList reads the YAML list of mappings in the Secret key sel of
// the server's namespace, for the field at path, checks each item with
// check, and returns them as promyaml.Encode writes them; none when sel is nil.
func (r *renderer) additionalList(path string, sel *corev1.SecretKeySelector, check func(yaml.MapSlice) error) ([]yaml.MapSlice, error) {
	if sel == nil {
		return nil, nil
	}
	text, err := r.cred.Secret(r.srv.Namespace, *sel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	path = fmt.Sprintf("%s: secret %q key %q", path, r.srv.Namespace+"/"+sel.Name, sel.Key)
	var list []yaml.MapSlice
	if err := yaml.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("%s: not a list of mappings: %w", path, err)
	}
	for i, it := range list {
		if it == nil {
			return nil, fmt.Errorf("%s: item %d: empty", path, i)
		}
		if err := check(it); err != nil {
			return nil, fmt.Errorf("%s: item %d: %w", path, i, err)
		}
		if list[i], err = normalizeYAML(it); err != nil {
			return nil, fmt.Errorf("%s: item %d: %w", path, i, err)
		}
	}
	return list, nil
}

// checkAlertmanagerConfig checks the relabelings of an additional
// alertmanager configuration.
func checkAlertmanagerConfig(am yaml.MapSlice) error {
	for _, it := range am {
		if it.Key == "relabel_configs" || it.Key == "alert_relabel_configs" {
			if err := checkRelabelings(it.Key.(string), it.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRelabelConfig checks an additional alert relabeling.
func checkRelabelConfig(rc yaml.MapSlice) error {
	b, err := yaml.Marshal(rc)
	if err != nil {
		return err
	}
	var c relabel.Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return yamlError(err)
	}
	return c.Validate(model.UTF8Validation)
}

// jobName returns the job_name of a scrape job, or "".
func jobName(job yaml.MapSlice) string {
	for _, it := range job {
		if it.Key == "job_name" {
			s, _ := it.Value.(string)
			return s
		}
	}
	return ""
}

// checkAdditionalJob checks one additional scrape job, whose name must not
// be in names, and returns its name, with the error too when it has one.
func checkAdditionalJob(job yaml.MapSlice, names map[string]bool) (string, error) {
	if job == nil {
		return "", errors.New("empty")
	}
	name := jobName(job)
	switch {
	case name == "":
		return "", errors.New("job_name is missing, empty or not a string")
	case names[name]:
		return name, errors.New("another job has that name")
	}
	for _, it := range job {
		if it.Key != "relabel_configs" && it.Key != "metric_relabel_configs" {
			continue
		}
		if err := checkRelabelings(it.Key.(string), it.Value); err != nil {
			return name, err
		}
	}
	return name, nil
}

// checkRelabelings checks the relabelings of key as Prometheus reads them.
func checkRelabelings(key string, v any) error {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: not a list", key)
	}
	for i, e := range list {
		if e == nil {
			return fmt.Errorf("%s[%d]: empty", key, i)
		}
		b, err := yaml.Marshal(e)
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		var c relabel.Config
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, yamlError(err))
		}
		if err := c.Validate(model.UTF8Validation); err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
	}
	return nil
}

// yamlError returns err without the line numbers of a yaml.TypeError,
// which count the lines of a relabeling marshalled again, not the
// user's.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		if _, rest, ok := strings.Cut(m, ": "); ok && strings.HasPrefix(m, "line ") {
			m = rest
		}
		msgs[i] = m
	}
	return errors.New(strings.Join(msgs, "; "))
}

// shardAdditionalJob appends to job's relabel_configs the sharding
// relabelings, unless one of them is a hashmod.
func shardAdditionalJob(job yaml.MapSlice, shards int) yaml.MapSlice {
	if shards <= 1 {
		return job
	}
	at := -1
	var relabelings []yaml.MapSlice
	for i, it := range job {
		if it.Key != "relabel_configs" {
			continue
		}
		at = i
		relabelings, _ = it.Value.([]yaml.MapSlice)
		if hasHashmod(relabelings) {
			return job
		}
	}
	item := yaml.MapItem{Key: "relabel_configs", Value: relabeling.AppendSharding(relabelings, shards, model.AddressLabel)}
	if at < 0 {
		return append(job, item)
	}
	job[at] = item
	return job
}

// hasHashmod tells whether one of the rendered relabelings rl is a
// hashmod: a job that has one is sharded by it, not by appendSharding's.
func hasHashmod(rl []yaml.MapSlice) bool {
	for _, rc := range rl {
		for _, f := range rc {
			if f.Key == "action" && f.Value == string(relabel.HashMod) {
				return true
			}
		}
	}
	return false
}

// normalizeYAML returns m with the values yaml.v2 decodes turned into
// those promyaml.Encode writes: a list of mappings is a []yaml.MapSlice, a
// list of scalars a []string, an int an int64. A key whose value is null
// is left out: Prometheus reads both as the field's zero value.
func normalizeYAML(m yaml.MapSlice) (yaml.MapSlice, error) {
	out := make(yaml.MapSlice, 0, len(m))
	for _, it := range m {
		k, ok := it.Key.(string)
		if !ok {
			return nil, fmt.Errorf("key %v is not a string", it.Key)
		}
		if it.Value == nil {
			continue
		}
		v, err := normalizeValue(it.Value)
		if err != nil {
			return nil, fmt.Errorf("%s%w", k, err)
		}
		out = append(out, yaml.MapItem{Key: k, Value: v})
	}
	return out, nil
}

func normalizeValue(v any) (any, error) {
	switch v := v.(type) {
	case string, bool, int64, float64:
		return v, nil
	case int:
		return int64(v), nil
	case yaml.MapSlice:
		m, err := normalizeYAML(v)
		if err != nil {
			return nil, fmt.Errorf(".%w", err)
		}
		return m, nil
	case []any:
		return normalizeList(v)
	default:
		return nil, fmt.Errorf(": unsupported value %v (%T)", v, v)
	}
}

// normalizeList returns a list of mappings or of scalars, written as
// strings: Prometheus reads no list of numbers or booleans.
func normalizeList(l []any) (any, error) {
	if len(l) == 0 {
		return []string{}, nil
	}
	if _, ok := l[0].(yaml.MapSlice); ok {
		ms := make([]yaml.MapSlice, len(l))
		for i, e := range l {
			m, ok := e.(yaml.MapSlice)
			if !ok {
				return nil, fmt.Errorf("[%d]: a list of mappings holds %v", i, e)
			}
			var err error
			if ms[i], err = normalizeYAML(m); err != nil {
				return nil, fmt.Errorf("[%d].%w", i, err)
			}
		}
		return ms, nil
	}
	ss := make([]string, len(l))
	for i, e := range l {
		switch e := e.(type) {
		case string:
			ss[i] = e
		case int, int64, float64, bool:
			ss[i] = fmt.Sprint(e)
		default:
			return nil, fmt.Errorf("[%d]: %v: a list of scalars holds a list or a mapping", i, e)
		}
	}
	return ss, nil
}
