import assert from "node:assert/strict";
import { flag, FlagError, parseFlags } from "./flags.ts";

const SPECS = [
  flag("addr", { aliases: ["grpc-addr"] }),
  flag("controller-namespace", { env: "LINKERD_NAMESPACE" }),
  flag("identity-trust-domain"),
  flag("token-audience", { repeatable: true }),
  flag("no-status-writes", { switch: true }),
];

const fails = (args: string[], re: RegExp, opts = {}) =>
  assert.throws(
    () => parseFlags(args, SPECS, opts),
    (e: Error) => e instanceof FlagError && re.test(e.message),
  );

Deno.test("flags: values, switches, repeatable flags and environment fallbacks", () => {
  const { flags } = parseFlags(
    ["--addr=0.0.0.0:8086", "--token-audience=a", "--token-audience=b", "--no-status-writes"],
    SPECS,
    { env: { LINKERD_NAMESPACE: "mesh" } },
  );
  assert.equal(flags.get("addr"), "0.0.0.0:8086");
  assert.deepEqual(flags.all("token-audience"), ["a", "b"]);
  assert.equal(flags.switch("no-status-writes"), true);
  assert.equal(flags.get("controller-namespace"), "mesh", "from the environment");
  assert.equal(flags.get("identity-trust-domain"), undefined);
  const over = parseFlags(["--controller-namespace=weft", "--no-status-writes=false"], SPECS, {
    env: { LINKERD_NAMESPACE: "mesh" },
  }).flags;
  assert.equal(over.get("controller-namespace"), "weft", "a flag wins over the environment");
  assert.equal(over.switch("no-status-writes", true), false);
  // A value keeps everything after the first "=".
  assert.equal(parseFlags(["--addr=a=b"], SPECS).flags.get("addr"), "a=b");
});

Deno.test("flags: drifted spellings are aliases of Linkerd's names; messages use the spelling given", () => {
  const { flags } = parseFlags(
    ["--control-plane-namespace=weft", "--identity-domain=td.example", "--grpc-addr=:8090"],
    SPECS,
  );
  assert.equal(flags.get("controller-namespace"), "weft");
  assert.equal(flags.get("identity-trust-domain"), "td.example");
  assert.equal(flags.get("addr"), ":8090");
  assert.equal(flags.label("addr"), "--grpc-addr");
  assert.equal(parseFlags(["--trust-domain=x"], SPECS).flags.get("identity-trust-domain"), "x");
  fails(
    ["--trust-domain=a", "--identity-trust-domain=a"],
    /--trust-domain and --identity-trust-domain are the same flag/,
  );
});

Deno.test("flags: unknown, malformed, value-less and conflicting flags are refused by name", () => {
  fails(["--adr=1"], /unknown flag --adr; did you mean --addr\?/);
  fails(["--bogus=1"], /unknown flag --bogus \(known: --addr --controller-namespace/);
  fails(["--addr"], /--addr needs a value \(--addr=VALUE\)/);
  fails(["--no-status-writes=yes"], /--no-status-writes: "yes" is not true or false/);
  fails(["-addr=1"], /unexpected argument "-addr=1"; flags look like --name=value/);
  fails(["--Addr=1"], /argument "--Addr=1" is not --name=value/);
  fails(["--addr=a:1", "--addr=b:2"], /--addr is given twice with different values/);
  fails(["extra"], /unexpected argument "extra"/);
  fails(["--bogus=1"], /\nusage: x$/, { usage: "usage: x" });
  const { positional } = parseFlags(["in.yaml", "--addr=:1"], SPECS, { positional: true });
  assert.deepEqual(positional, ["in.yaml"]);
});
