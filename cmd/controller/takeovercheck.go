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
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller/alertmanager"
	promserver "github.com/podreload/podreload/controller/prometheus"
	"github.com/podreload/podreload/controller/takeover"
)

// takeoverCheck prints, for each Prometheus and Alertmanager object of
// files (or of the cluster when there are none), what taking it over would
// do, and returns the exit code: 1 when any would be refused, 2 when they
// cannot be read.
func takeoverCheck(ctx context.Context, kubeconfig string, files []string, stdout, stderr io.Writer) int {
	var (
		checks []takeover.Check
		err    error
	)
	if len(files) > 0 {
		checks, err = readChecks(files)
	} else {
		checks, err = listChecks(ctx, kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	if len(checks) == 0 {
		fmt.Fprintln(stdout, "no Prometheus or Alertmanager object found")
		return 0
	}
	code := 0
	for _, c := range checks {
		fmt.Fprintf(stdout, "%s %s/%s (controller-id %q):\n", c.Kind, c.Namespace, c.Name, c.ControllerID)
		if len(c.Unsupported) > 0 {
			code = 1
			fmt.Fprintf(stdout, "  refused, not supported yet: %s; annotated, it stays untouched\n", takeover.UnsupportedMessage(c.Unsupported))
			continue
		}
		fmt.Fprintf(stdout, "  can be taken over: annotate it with %s=<the controller's --controller-id>\n", takeover.AnnotationControllerID)
		fmt.Fprintf(stdout, "  rolls once, one pod at a time, to podreload's sidecar: StatefulSet %s (%d replicas each); PVCs and data stay\n",
			strings.Join(c.StatefulSets, ", "), c.Replicas)
	}
	return code
}

// readChecks checks the Prometheus and Alertmanager objects of YAML
// files, in their order.
func readChecks(files []string) ([]takeover.Check, error) {
	var out []takeover.Check
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
			if meta.APIVersion != monitoringv1.SchemeGroupVersion.String() {
				continue
			}
			switch meta.Kind {
			case monitoringv1.PrometheusesKind:
				var p monitoringv1.Prometheus
				if err := yaml.UnmarshalStrict(doc, &p); err != nil {
					return nil, fmt.Errorf("%s: Prometheus: %w", f, err)
				}
				out = append(out, promserver.CheckTakeover(&p))
			case monitoringv1.AlertmanagersKind:
				var am monitoringv1.Alertmanager
				if err := yaml.UnmarshalStrict(doc, &am); err != nil {
					return nil, fmt.Errorf("%s: Alertmanager: %w", f, err)
				}
				out = append(out, alertmanager.CheckTakeover(&am))
			}
		}
	}
	return out, nil
}

// listChecks checks the Prometheus and Alertmanager objects of the
// cluster; a cluster without the Alertmanager CRD has none.
func listChecks(ctx context.Context, kubeconfig string) ([]takeover.Check, error) {
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
	var proms monitoringv1.PrometheusList
	if err := c.List(ctx, &proms); err != nil {
		return nil, fmt.Errorf("list Prometheus objects: %w", err)
	}
	var out []takeover.Check
	for i := range proms.Items {
		out = append(out, promserver.CheckTakeover(&proms.Items[i]))
	}
	var ams monitoringv1.AlertmanagerList
	if err := c.List(ctx, &ams); meta.IsNoMatchError(err) {
		return out, nil
	} else if err != nil {
		return nil, fmt.Errorf("list Alertmanager objects: %w", err)
	}
	for i := range ams.Items {
		out = append(out, alertmanager.CheckTakeover(&ams.Items[i]))
	}
	return out, nil
}
