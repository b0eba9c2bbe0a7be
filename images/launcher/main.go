// launcher is the one binary behind the image's commands (weft-proxy, weft-init, weft-await, weft-control): each
// name is a symlink to it, and it replaces itself (exec, same PID) with Deno running that command's entry point
// from the dependency cache baked into the image. The image has no shell, so this is what lets a pod spec say
// `command: [weft-proxy]` instead of spelling out Deno's flags.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const (
	deno    = "/usr/local/bin/deno"
	appDir  = "/app"
	denoDir = "/deno-dir"
)

// Entry points under appDir, by command name.
var commands = map[string]string{
	"weft-proxy":   "proxy/main.ts",
	"weft-init":    "init/main.ts",
	"weft-await":   "control/injector/await.ts",
	"weft-control": "control/main.ts",
}

// proxyV8Flags keep the sidecar's V8 heap close to what it holds live (~17-23 MiB). With V8's defaults the young
// generation grows to 16 MiB semi-spaces and the old generation to ~3x its live size between full collections:
// that is most of a loaded proxy's 120-130 MiB of anonymous memory. --optimize-for-size (a small young generation,
// small heap growth steps) measured 33 MiB idle and 39-50 MiB after 30k requests, for ~10 us more GC pause per
// request per proxy; --max-semi-space-size is ignored under it, and alone it saves less and costs more CPU
// (docs/proxy_memory.md, proxy/bench/memory_probe.ts).
const proxyV8Flags = "--optimize-for-size"

// denoArgs is the argv Deno runs with for command name (entry point script, the command's own arguments after).
func denoArgs(name, script string, rest []string) []string {
	// --cached-only: nothing is ever downloaded at run time; --frozen: the lockfile baked into the image is the
	// truth (and the root filesystem may be read-only). --config makes the import map independent of workingDir.
	args := []string{deno, "run", "-A", "--cached-only", "--frozen", "--no-prompt",
		"--config=" + appDir + "/deno.json"}
	if name == "weft-proxy" {
		args = append(args, "--v8-flags="+proxyV8Flags)
	}
	args = append(args, appDir+"/"+script)
	return append(args, rest...)
}

func main() {
	name := filepath.Base(os.Args[0])
	script, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "launcher: unknown command %q (want one of weft-proxy, weft-init, weft-await, weft-control)\n", name)
		os.Exit(127)
	}
	env := os.Environ()
	if os.Getenv("DENO_DIR") == "" {
		env = append(env, "DENO_DIR="+denoDir)
	}
	args := denoArgs(name, script, os.Args[1:])
	err := syscall.Exec(deno, args, env)
	fmt.Fprintf(os.Stderr, "launcher: exec %s: %v\n", deno, err)
	os.Exit(126)
}
