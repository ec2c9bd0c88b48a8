package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/podreload/podreload/reloader"
)

// newTrigger returns the trigger --reload-method selects and the TLS mode of
// the URL it calls, if any.
func newTrigger(cfg config) (reloader.Trigger, string, error) {
	switch cfg.method {
	case "signal":
		sig, err := reloader.ParseSignal(cfg.signal)
		if err != nil {
			return nil, "", fmt.Errorf("--reload-signal: %w", err)
		}
		t := &reloader.SignalTrigger{ProcessName: cfg.processName, PIDFile: cfg.pidFile, Signal: sig, Timeout: cfg.reloadTimeout}
		if cfg.runtimeInfoURL == nil {
			return t, "", nil
		}
		client, mode, err := cfg.tls.Client(cfg.runtimeInfoURL)
		t.RuntimeInfoURL, t.Client = cfg.runtimeInfoURL, client
		return t, mode, err
	case "command":
		args := strings.Fields(cfg.command)
		if len(args) == 0 {
			return nil, "", errors.New("--reload-method=command needs --reload-command")
		}
		return &reloader.CommandTrigger{Args: args, Timeout: cfg.reloadTimeout}, "", nil
	default:
		if cfg.reloadURL == nil {
			return nil, "", errors.New("--reload-method=http needs --reload-url")
		}
		client, mode, err := cfg.tls.Client(cfg.reloadURL)
		return &reloader.HTTPTrigger{URL: cfg.reloadURL, Timeout: cfg.reloadTimeout, Client: client}, mode, err
	}
}
