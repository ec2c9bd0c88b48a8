package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	promserver "github.com/podreload/podreload/controller/prometheus"
	"github.com/podreload/podreload/controller/takeover"
)

// takeoverCheck prints, for each Prometheus object of files (or of the
// cluster when there are none), what taking it over would do, and returns
// the exit code: 1 when any would be refused, 2 when they cannot be read.
func takeoverCheck(ctx context.Context, kubeconfig string, files []string, stdout, stderr io.Writer) int {
	var (
		proms []monitoringv1.Prometheus
		err   error
	)
	if len(files) > 0 {
		proms, err = readPrometheuses(files)
	} else {
		proms, err = listPrometheuses(ctx, kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	if len(proms) == 0 {
		fmt.Fprintln(stdout, "no Prometheus object found")
		return 0
	}
	code := 0
	for i := range proms {
		c := promserver.CheckTakeover(&proms[i])
		fmt.Fprintf(stdout, "Prometheus %s/%s (controller-id %q):\n", c.Namespace, c.Name, c.ControllerID)
		if len(c.Unsupported) > 0 {
			code = 1
			fmt.Fprintf(stdout, "  refused, not supported yet: %s; annotated, it stays untouched\n", takeover.UnsupportedMessage(c.Unsupported))
			continue
		}
		fmt.Fprintf(stdout, "  can be taken over: annotate it with %s=<the controller's --controller-id>\n", promserver.AnnotationControllerID)
		fmt.Fprintf(stdout, "  rolls once, one pod at a time, to podreload's sidecar: StatefulSet %s (%d replicas each); PVCs and data stay\n",
			strings.Join(c.StatefulSets, ", "), c.Replicas)
	}
	return code
}

// readPrometheuses reads the Prometheus objects of YAML files.
func readPrometheuses(files []string) ([]monitoringv1.Prometheus, error) {
	var out []monitoringv1.Prometheus
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			var meta struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if meta.APIVersion != monitoringv1.SchemeGroupVersion.String() || meta.Kind != monitoringv1.PrometheusesKind {
				continue
			}
			var p monitoringv1.Prometheus
			if err := yaml.UnmarshalStrict(doc, &p); err != nil {
				return nil, fmt.Errorf("%s: Prometheus: %w", f, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// listPrometheuses lists the Prometheus objects of the cluster.
func listPrometheuses(ctx context.Context, kubeconfig string) ([]monitoringv1.Prometheus, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := monitoringv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var list monitoringv1.PrometheusList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Prometheus objects: %w", err)
	}
	return list.Items, nil
}
