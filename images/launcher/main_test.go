package main

import (
	"slices"
	"testing"
)

func TestProxyGetsTheMemoryFlagsBeforeItsEntryPoint(t *testing.T) {
	args := denoArgs("weft-proxy", commands["weft-proxy"], []string{"x"})
	flag := slices.Index(args, "--v8-flags="+proxyV8Flags)
	entry := slices.Index(args, appDir+"/proxy/main.ts")
	if flag < 0 || entry < 0 || flag > entry || args[len(args)-1] != "x" {
		t.Fatalf("weft-proxy argv %q: want --v8-flags=%s before the entry point and the arguments last", args, proxyV8Flags)
	}
}

func TestOtherCommandsRunWithV8Defaults(t *testing.T) {
	for name, script := range commands {
		if name == "weft-proxy" {
			continue
		}
		for _, a := range denoArgs(name, script, nil) {
			if len(a) >= 11 && a[:11] == "--v8-flags=" {
				t.Fatalf("%s argv has %s; only the sidecar is tuned", name, a)
			}
		}
	}
}
