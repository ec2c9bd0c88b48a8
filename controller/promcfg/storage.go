package promcfg

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
)

// storageSettings renders the storage section of spec.exemplars and
// spec.tsdb, and the retention when not nil (Input.Retention), as
// prometheus-operator's generator (appendStorageSettingsConfig), each key
// for the Prometheus versions that have it: the section from 2.29,
// exemplars.max_exemplars, tsdb.out_of_order_time_window from 2.39,
// stale_series_compaction_threshold from 3.10, chunk_encoding from 3.13;
// none when they set nothing. An agent's (GenerateAgentConfiguration)
// has the TSDB's settings alone, the out-of-order window from 2.54.
func (r *renderer) storageSettings() (yaml.MapSlice, error) {
	spec := &r.srv.Spec
	var storage, tsdb yaml.MapSlice
	if e := spec.Exemplars; e != nil && e.MaxSize != nil && !r.agent {
		storage = append(storage, yaml.MapItem{Key: "exemplars", Value: yaml.MapSlice{{Key: "max_exemplars", Value: *e.MaxSize}}})
	}
	settings, err := r.tsdbSettings()
	if err != nil {
		return nil, err
	}
	tsdb = append(tsdb, settings...)
	if r.agent && len(tsdb) > 1 {
		// GenerateAgentConfiguration writes a storage section for each,
		// twice the same key, which Prometheus refuses.
		return nil, errors.New("spec.tsdb: prometheus-operator writes one storage section per setting of an agent, which Prometheus refuses: set one of outOfOrderTimeWindow, staleSeriesCompactionThreshold and chunkEncoding.floats")
	}
	if r.retention != nil && !r.agent {
		// One storage section: prometheus-operator's retention goes
		// beside the other TSDB settings.
		tsdb = append(tsdb, yaml.MapItem{Key: "retention", Value: r.retention})
	}
	if len(tsdb) > 0 {
		storage = append(storage, yaml.MapItem{Key: "tsdb", Value: tsdb})
	}
	if len(storage) == 0 || !r.version.AtLeast(2, 29) {
		return nil, nil
	}
	return yaml.MapSlice{{Key: "storage", Value: storage}}, nil
}

// tsdbSettings renders the settings of spec.tsdb, checked as
// prometheus-operator checks them, for the versions that have them.
func (r *renderer) tsdbSettings() (yaml.MapSlice, error) {
	t := r.srv.Spec.TSDB
	if t == nil {
		return nil, nil
	}
	var tsdb yaml.MapSlice
	if t.OutOfOrderTimeWindow != nil {
		w := string(*t.OutOfOrderTimeWindow)
		if _, err := model.ParseDuration(w); err != nil {
			return nil, fmt.Errorf("spec.tsdb.outOfOrderTimeWindow: %w", err)
		}
		if r.agent && r.version.AtLeast(2, 54) || !r.agent && r.version.AtLeast(2, 39) {
			tsdb = append(tsdb, yaml.MapItem{Key: "out_of_order_time_window", Value: w})
		}
	}
	if q := t.StaleSeriesCompactionThreshold; q != nil {
		v := q.AsApproximateFloat64()
		if v < 0 || v > 1 {
			return nil, fmt.Errorf("spec.tsdb.staleSeriesCompactionThreshold: %s is not between 0 and 1", q.String())
		}
		if r.version.AtLeast(3, 10) {
			tsdb = append(tsdb, yaml.MapItem{Key: "stale_series_compaction_threshold", Value: v})
		}
	}
	if c := t.ChunkEncoding; c != nil && c.Floats != nil {
		switch f := *c.Floats; {
		case f != monitoringv1.ChunkEncodingFloatsXor && f != monitoringv1.ChunkEncodingFloatsXor2:
			return nil, fmt.Errorf("spec.tsdb.chunkEncoding.floats: %q is not Xor or Xor2", f)
		case f == monitoringv1.ChunkEncodingFloatsXor && slices.Contains(r.srv.Spec.EnableFeatures, "st-storage"):
			return nil, errors.New("spec.tsdb.chunkEncoding.floats: Xor is incompatible with the st-storage feature (XOR chunks do not store start timestamps)")
		}
		if r.version.AtLeast(3, 13) {
			tsdb = append(tsdb, yaml.MapItem{Key: "chunk_encoding", Value: yaml.MapSlice{{Key: "floats", Value: strings.ToLower(string(*c.Floats))}}})
		}
	}
	return tsdb, nil
}
