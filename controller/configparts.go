package controller

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/reloader"
)

// A configuration too large for the config Secret is split (prometheus-
// operator issue #4702): the config Secret keeps global, rule_files,
// alerting, remote_write and the scrape jobs that fit, and names the
// others' Secrets, <secret>-1, <secret>-2..., in its scrape_config_files
// and on its leading reloader.PartDirective lines, with the SHA-256 of
// each, so that the reloaders apply nothing before every part of one
// generation is there, and the content hash of the config Secret's key
// covers the whole.
const (
	// maxConfigBytes is the largest configuration file, uncompressed, a
	// reloader renders at its default --config-max-size (16 MiB): a
	// larger one is split, as one too large gzipped for a Secret is.
	maxConfigBytes = 16 << 20
	// minPartBytes and maxPartBytes bound the scrape jobs of a part,
	// uncompressed: half maxConfigBytes at most, for margin.
	minPartBytes = 4 << 20
	maxPartBytes = 8 << 20
	// maxPartGzip bounds a part gzipped: half the API server's limit on a
	// Secret, as maxShardBytes is for a rule ConfigMap.
	maxPartGzip = 512 << 10
	// partBoundary makes one job name in so many end a part (once it
	// holds minPartBytes): see chunkJobs.
	partBoundary = 256
	// labelConfigPart marks the part Secrets of a server with their
	// number; they also carry labelConfig.
	labelConfigPart = "podreload.dev/config-part"
	// scrapeConfigsKey starts the scrape_configs section.
	scrapeConfigsKey = "scrape_configs:\n"
)

// ConfigPartName is the name of the i-th part Secret (from 1) of server.
func ConfigPartName(server *v1alpha1.PrometheusServer, i int) string {
	return ConfigSecretName(server) + "-" + strconv.Itoa(i)
}

// job is one scrape job, encoded as an item of scrape_configs.
type job struct {
	monitor int // index in configParts.monitors
	name    string
	item    []byte
}

// splitConfig is a configuration split: the main one, gzipped, and its
// parts' Secrets.
type splitConfig struct {
	main, mainGzip []byte
	parts          []*corev1.Secret
	// rejected are the monitors left out: a job of theirs does not fit a
	// part alone.
	rejected []rejection
}

// split splits the configuration of p, whose global and rule_files
// sections are head, into a main configuration and parts: the jobs are
// cut into chunks (chunkJobs) in the order of their monitors (namespace,
// name), the first chunk stays in the main configuration when it fits
// there, and each other goes into a part Secret, numbered in order. A
// monitor with a job too large for a part alone is left out.
func split(server *v1alpha1.PrometheusServer, head []byte, p configParts) (*splitConfig, error) {
	jobs, err := encodeJobs(p.monitors)
	if err != nil {
		return nil, err
	}
	rest, err := encodeYAML(p.rest, 4<<10)
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	out := &splitConfig{}
	var gzipped [][]byte
	for {
		var tooLarge []int
		var chunks [][]job
		chunks, gzipped, tooLarge, err = gzipChunks(chunkJobs(jobs))
		if err != nil {
			return nil, err
		}
		if len(tooLarge) == 0 {
			mainJobs, main, mainGzip, err := mainConfig(server, head, rest, chunks, gzipped)
			if err != nil {
				return nil, err
			}
			out.main, out.mainGzip = main, mainGzip
			for i, gz := range gzipped[mainJobs:] {
				out.parts = append(out.parts, configPart(server, i+1, gz))
			}
			return out, nil
		}
		for _, m := range tooLarge {
			mj := p.monitors[m]
			out.rejected = append(out.rejected, rejection{Kind: mj.kind, Namespace: mj.namespace, Name: mj.name,
				Reason: fmt.Sprintf("a scrape job of it is more than the %d bytes, gzipped, a part of the configuration holds", maxPartGzip)})
		}
		jobs = slices.DeleteFunc(jobs, func(j job) bool { return slices.Contains(tooLarge, j.monitor) })
	}
}

// encodeJobs encodes the jobs of monitors, in order, each as an item of
// scrape_configs.
func encodeJobs(monitors []monitorJobs) ([]job, error) {
	var jobs []job
	for i, m := range monitors {
		for _, j := range m.jobs {
			b, err := encodeYAML(yaml.MapSlice{{Key: "scrape_configs", Value: []yaml.MapSlice{j}}}, 3<<10)
			if err != nil {
				return nil, fmt.Errorf("render config: %w", err)
			}
			name, _ := j[0].Value.(string) // job_name, first.
			jobs = append(jobs, job{monitor: i, name: name, item: b[len(scrapeConfigsKey):]})
		}
	}
	return jobs, nil
}

// chunkJobs cuts jobs into chunks of at most maxPartBytes (a job larger
// than that alone is a chunk alone), where each chunk ends after a job
// whose name hashes to a boundary (one in partBoundary) once it holds
// minPartBytes. Where a chunk ends depends on its own jobs only, not on
// those before it, so a change to a monitor moves the jobs of the chunk
// it is in at most: the chunks before and after it keep theirs, but for
// the rare chunk that reaches maxPartBytes without a boundary.
func chunkJobs(jobs []job) [][]job {
	var (
		chunks [][]job
		start  int
		size   int
	)
	for i, j := range jobs {
		if size > 0 && size+len(j.item) > maxPartBytes {
			chunks, start, size = append(chunks, jobs[start:i]), i, 0
		}
		size += len(j.item)
		if size >= minPartBytes && xxhash.Sum64String(j.name)%partBoundary == 0 {
			chunks, start, size = append(chunks, jobs[start:i+1]), i+1, 0
		}
	}
	if start < len(jobs) {
		chunks = append(chunks, jobs[start:])
	}
	return chunks
}

// gzipChunks gzips each chunk of jobs as a part, halving those too large
// gzipped until they fit; it returns the chunks that result, gzipped, or
// the monitors (indexes) with a job too large alone.
func gzipChunks(chunks [][]job) ([][]job, [][]byte, []int, error) {
	var (
		out      [][]job
		gzipped  [][]byte
		tooLarge []int
	)
	for len(chunks) > 0 {
		c := chunks[0]
		chunks = chunks[1:]
		parts := make([][]byte, 0, len(c)+1)
		parts = append(parts, []byte(scrapeConfigsKey))
		for _, j := range c {
			parts = append(parts, j.item)
		}
		gz, err := gzipConfig(maxPartGzip, parts...)
		var sizeErr *sizeError
		switch {
		case err == nil:
			out, gzipped = append(out, c), append(gzipped, gz)
		case !errors.As(err, &sizeErr):
			return nil, nil, nil, err
		case len(c) == 1:
			tooLarge = append(tooLarge, c[0].monitor)
		default:
			chunks = append([][]job{c[:len(c)/2], c[len(c)/2:]}, chunks...)
		}
	}
	return out, gzipped, tooLarge, nil
}

// mainConfig returns how many chunks (0 or 1) the main configuration
// holds, and that configuration, plain and gzipped: the part directives,
// head, scrape_config_files, the jobs of the first chunk when they fit in
// the config Secret, and rest.
func mainConfig(server *v1alpha1.PrometheusServer, head, rest []byte, chunks [][]job, gzipped [][]byte) (int, []byte, []byte, error) {
	for held := min(1, len(chunks)); held >= 0; held-- {
		var b []byte
		for i, gz := range gzipped[held:] {
			b = reloader.AppendPartDirective(b, ConfigPartName(server, i+1), gz)
		}
		b = append(b, head...)
		if n := len(gzipped) - held; n > 0 {
			b = append(b, "scrape_config_files:\n"...)
			for i := range n {
				b = append(b, "- "...)
				b = appendYAMLString(b, reloader.PartPath(ConfigPartName(server, i+1)))
				b = append(b, '\n')
			}
		}
		if held == 0 {
			b = append(b, "scrape_configs: []\n"...)
		} else {
			b = append(b, scrapeConfigsKey...)
			for _, j := range chunks[0] {
				b = append(b, j.item...)
			}
		}
		b = append(b, rest...)
		gz, err := gzipConfig(corev1.MaxSecretSize, b)
		var sizeErr *sizeError
		switch {
		case err == nil && len(b) <= maxConfigBytes:
			return held, b, gz, nil
		case err != nil && !errors.As(err, &sizeErr):
			return 0, nil, nil, err
		case held == 0 && err != nil:
			return 0, nil, nil, err
		case held == 0:
			return 0, nil, nil, &sizeError{size: len(b), gzipped: len(gz), limit: corev1.MaxSecretSize}
		}
	}
	return 0, nil, nil, errors.New("render config: no jobs") // Never: held reaches 0 and returns.
}

// configPart is the i-th part Secret of server, holding gz.
func configPart(server *v1alpha1.PrometheusServer, i int, gz []byte) *corev1.Secret {
	s := configSecret(server, gz)
	s.Name = ConfigPartName(server, i)
	s.Labels[labelConfigPart] = strconv.Itoa(i)
	return s
}

// isConfigPart reports whether name is the name of a part Secret of
// server.
func isConfigPart(server *v1alpha1.PrometheusServer, name string) bool {
	rest, ok := strings.CutPrefix(name, ConfigSecretName(server)+"-")
	n, err := strconv.Atoi(rest)
	return ok && err == nil && n > 0 && strconv.Itoa(n) == rest
}

// partSlots is the number of part Secrets the pods of a server can read
// without a change for parts of them: parts rounded up to a multiple of 4
// (none without parts). The Role of the API source names them; the
// volume source mounts them (optional).
func partSlots(parts int) int {
	return (parts + ruleVolumeStep - 1) / ruleVolumeStep * ruleVolumeStep
}

// partSecretNames are the names of the part Secrets of server its pods
// can read, slots of them.
func partSecretNames(server *v1alpha1.PrometheusServer, slots int) []string {
	names := make([]string, slots)
	for i := range names {
		names[i] = ConfigPartName(server, i+1)
	}
	return names
}
