// Package sidecar is the config-reloader in the pods of a kind: its two
// containers (the init container that renders once before the server
// starts, and the sidecar that keeps the server converged), the flags
// every kind gives it, where it reads and writes (Source: the API server
// or the kubelet's volumes), the Role and RoleBinding its pods need, the
// Secrets they keep their state in without a claim (StateSecrets), what
// they report in their pods (Applied) and the time from a write to that
// report (ApplyTimes). It knows no kind: the kind says where the reloader
// reads and writes, and how it reloads the server.
package sidecar

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Port is where the sidecar serves its metrics and health endpoints.
const Port = 8080

// Spec is a kind's config-reloader.
type Spec struct {
	// Image of both containers.
	Image string
	// Resources of both containers.
	Resources corev1.ResourceRequirements
	// Env of both containers, after POD_NAME and POD_NAMESPACE (which
	// the reloaders need to report in their pod).
	Env []corev1.EnvVar
	// SourceArgs tell both containers where to read and write.
	SourceArgs []string
	// ReloadArgs tell the sidecar how to reload the server, and verify it.
	ReloadArgs []string
	// Mounts are both containers' volume mounts; SidecarMounts, the
	// sidecar's only, after them.
	Mounts, SidecarMounts []corev1.VolumeMount
	// SecurityContext of both containers.
	SecurityContext *corev1.SecurityContext
	// ListenHost, when set, is the only host the sidecar serves on
	// (--listen-address=<host>:Port), with no container port, as
	// prometheus-operator's config-reloader of a Prometheus with
	// listenLocal; empty, every interface, on the port reloader-web.
	ListenHost string
	// LogLevel and LogFormat of both containers, the server's own
	// (spec.logLevel, spec.logFormat), as prometheus-operator passes them
	// to its config-reloader: set when not the default (info, logfmt).
	LogLevel, LogFormat string
	// NoReport leaves --report-pod out: the pod has no service account
	// token to reach the API server with (the kind's reloaders then read
	// their volumes, and what the server runs is not known).
	NoReport bool
}

// The names of the config-reloader's containers in a kind's pods.
const (
	InitContainerName = "init-config-reloader"
	ContainerName     = "config-reloader"
)

// RunningImage is the image the config-reloader sidecar of the pod
// template t runs, or "" when t has none.
func RunningImage(t corev1.PodTemplateSpec) string {
	for _, c := range t.Spec.Containers {
		if c.Name == ContainerName {
			return c.Image
		}
	}
	return ""
}

// KeepRunningImage returns desired, a kind's StatefulSet whose
// config-reloaders run image, the controller's default; or, when live,
// the StatefulSet in the cluster (nil when none), runs them at another
// image and render, the kind's render with that image, gives live's pod
// template hash (the annotation hashKey), what render gives: the image is
// then the only change, which an upgrade of the controller makes, and the
// pods keep the config-reloader they run until another change rolls them.
// A StatefulSet the controller did not write has no hash: desired.
func KeepRunningImage(live, desired *appsv1.StatefulSet, image, hashKey string, render func(image string) *appsv1.StatefulSet) *appsv1.StatefulSet {
	if live == nil {
		return desired
	}
	running, hash := RunningImage(live.Spec.Template), live.Spec.Template.Annotations[hashKey]
	if running == "" || running == image || hash == "" {
		return desired
	}
	if kept := render(running); kept != nil && kept.Spec.Template.Annotations[hashKey] == hash {
		return kept
	}
	return desired
}

// Containers renders the init container, which renders the
// configuration once (--watch-interval=0) so that the server starts with
// it, and the sidecar, which reports what the server runs in its pod
// (--report-pod, under Role's grant) and serves on Port.
func Containers(s Spec) (initContainer, sidecar corev1.Container) {
	env := append([]corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
	}, s.Env...)
	initContainer = corev1.Container{
		Name:            InitContainerName,
		Image:           s.Image,
		Args:            slices.Concat([]string{"--watch-interval=0"}, s.SourceArgs, s.logArgs()),
		Env:             env,
		Resources:       s.Resources,
		VolumeMounts:    s.Mounts,
		SecurityContext: s.SecurityContext,
	}
	args := slices.Clone(s.SourceArgs)
	if !s.NoReport {
		args = append(args, "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)")
	}
	args = slices.Concat(args, s.ReloadArgs, s.logArgs())
	ports := []corev1.ContainerPort{{Name: "reloader-web", ContainerPort: Port, Protocol: corev1.ProtocolTCP}}
	if s.ListenHost != "" {
		ports = nil
	}
	sidecar = corev1.Container{
		Name:            ContainerName,
		Image:           s.Image,
		Args:            append(args, "--listen-address="+s.ListenHost+":"+strconv.Itoa(Port)),
		Env:             env,
		Ports:           ports,
		Resources:       s.Resources,
		VolumeMounts:    slices.Concat(s.Mounts, s.SidecarMounts),
		SecurityContext: s.SecurityContext,
	}
	return initContainer, sidecar
}

// logArgs are the log flags of both containers.
func (s Spec) logArgs() []string {
	var args []string
	if s.LogLevel != "" && s.LogLevel != "info" {
		args = append(args, "--log-level="+s.LogLevel)
	}
	if s.LogFormat != "" && s.LogFormat != "logfmt" {
		args = append(args, "--log-format="+s.LogFormat)
	}
	return args
}
