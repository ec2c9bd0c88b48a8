package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/takeover"
)

// takeoverCheck prints, for each object of a kind taken over (the table
// of kinds, controller.TakeoverCheckers) of files (or of the cluster when
// there are none), what taking it over would do, and returns the exit
// code: 1 when any would be refused, 2 when they cannot be read.
func takeoverCheck(ctx context.Context, kubeconfig string, files []string, stdout, stderr io.Writer) int {
	checkers := controller.TakeoverCheckers()
	var (
		checks []takeover.Check
		err    error
	)
	if len(files) > 0 {
		checks, err = readChecks(checkers, files)
	} else {
		checks, err = listChecks(ctx, checkers, kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	if len(checks) == 0 {
		var names []string
		for _, c := range checkers {
			names = append(names, c.Kind)
		}
		fmt.Fprintf(stdout, "no %s object found\n", strings.Join(names, " or "))
		return 0
	}
	code := 0
	for _, c := range checks {
		fmt.Fprintf(stdout, "%s %s/%s (controller-id %q):\n", c.Kind, c.Namespace, c.Name, c.ControllerID)
		for _, w := range c.Warnings {
			fmt.Fprintf(stdout, "  warning: %s\n", w)
		}
		if len(c.Unsupported) > 0 {
			code = 1
			fmt.Fprintf(stdout, "  refused, not supported yet: %s; annotated, it stays untouched\n", takeover.UnsupportedMessage(c.Unsupported))
			continue
		}
		if len(c.Invalid) > 0 {
			code = 1
			fmt.Fprintf(stdout, "  invalid, refused by prometheus-operator's validation: %s; annotated, it is taken over and nothing is written until they go\n", takeover.InvalidMessage(c.Invalid))
			continue
		}
		fmt.Fprintf(stdout, "  can be taken over: annotate it with %s=<the controller's --controller-id>\n", takeover.AnnotationControllerID)
		for _, n := range c.Notes {
			fmt.Fprintf(stdout, "  note: %s\n", n)
		}
		if c.DaemonSet != "" {
			fmt.Fprintf(stdout, "  rolls once, node by node, to podreload's sidecar: DaemonSet %s\n", c.DaemonSet)
			continue
		}
		fmt.Fprintf(stdout, "  rolls once, one pod at a time, to podreload's sidecar: StatefulSet %s (%d replicas each); PVCs and data stay\n",
			strings.Join(c.StatefulSets, ", "), c.Replicas)
	}
	return code
}

// readChecks checks the objects of YAML files that checkers check, in
// their order.
func readChecks(checkers []takeover.Checker, files []string) ([]takeover.Check, error) {
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
			for _, c := range checkers {
				if c.APIVersion != meta.APIVersion || c.Kind != meta.Kind {
					continue
				}
				// As the API server reads it: of duplicate keys the
				// last wins, with a warning.
				data, err := yaml.YAMLToJSON(doc)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", f, c.Kind, err)
				}
				check, err := decodeCheck(c, data)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				check.Warnings = append(duplicateKeys(doc), check.Warnings...)
				out = append(out, check)
			}
		}
	}
	return out, nil
}

// listChecks checks the objects of the cluster that checkers check; a
// cluster without the CRD of a kind has none of it.
func listChecks(ctx context.Context, checkers []takeover.Checker, kubeconfig string) ([]takeover.Check, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := controller.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var out []takeover.Check
	for _, ch := range checkers {
		// Listed as stored, not decoded into the types, which would drop
		// the fields of a newer prometheus-operator's CRD.
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(ch.APIVersion)
		list.SetKind(ch.Kind + "List")
		if err := c.List(ctx, list); meta.IsNoMatchError(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("list %s objects: %w", ch.Kind, err)
		}
		for i := range list.Items {
			data, err := list.Items[i].MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("list %s objects: %w", ch.Kind, err)
			}
			check, err := decodeCheck(ch, data)
			if err != nil {
				return nil, err
			}
			out = append(out, check)
		}
	}
	return out, nil
}

// decodeCheck decodes data, the JSON of an object c checks, as the API
// server does (takeover.Decode), and checks it: a field its types do not
// know refuses it, by path; one that differs from one of theirs by case
// alone is dropped, with a warning.
func decodeCheck(c takeover.Checker, data []byte) (takeover.Check, error) {
	obj := c.New()
	d, err := takeover.Decode(data, obj)
	if err != nil {
		return takeover.Check{}, fmt.Errorf("%s: %w", c.Kind, err)
	}
	check, err := c.Check(obj)
	if err != nil {
		return takeover.Check{}, err
	}
	if unknown := takeover.UnknownFields(d); len(unknown) > 0 {
		check.Unsupported = append(check.Unsupported, unknown...)
		slices.Sort(check.Unsupported)
	}
	for _, p := range d.Dropped {
		check.Warnings = append(check.Warnings, p+": not a field (field names are case-sensitive): dropped, as the API server drops it")
	}
	return check, nil
}

// duplicateKeys are the warnings of the keys doc (YAML) sets twice in a
// mapping: the API server keeps the last.
func duplicateKeys(doc []byte) []string {
	_, err := yaml.YAMLToJSONStrict(doc)
	if err == nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(err.Error(), "\n") {
		if line = strings.TrimSpace(line); strings.HasSuffix(line, "already set in map") {
			out = append(out, line+": the last one is read, as the API server reads it")
		}
	}
	return out
}
