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
	// --cached-only: nothing is ever downloaded at run time; --frozen: the lockfile baked into the image is the
	// truth (and the root filesystem may be read-only). --config makes the import map independent of workingDir.
	args := []string{deno, "run", "-A", "--cached-only", "--frozen", "--no-prompt",
		"--config=" + appDir + "/deno.json", appDir + "/" + script}
	args = append(args, os.Args[1:]...)
	err := syscall.Exec(deno, args, env)
	fmt.Fprintf(os.Stderr, "launcher: exec %s: %v\n", deno, err)
	os.Exit(126)
}
