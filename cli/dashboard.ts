/**
 * `weft dashboard`: a port-forward from 127.0.0.1:--port to the dashboard pod's web port (as `linkerd viz
 * dashboard` does), the URL printed, held open until Ctrl-C. A browser is started only when $BROWSER names
 * one; otherwise nothing is opened.
 */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../proto/control_plane.ts";
import { Ports } from "../proto/ports.ts";
import { isPodReady, type Obj } from "../manifests/check/objects.ts";
import { openKube } from "./connect.ts";
import { type CliContext, type Command, UsageError } from "./context.ts";
import { portForward } from "./diagnostics/port_forward.ts";
import { flagHelp, type FlagSpec, parseFlags } from "./flags.ts";

/** Linkerd's `viz dashboard` default local port. */
export const DEFAULT_DASHBOARD_PORT = 50750;

export const DASHBOARD_FLAGS: readonly FlagSpec[] = [
  {
    name: "port",
    short: "p",
    help: "local port to listen on (0: any free one)",
    default: String(DEFAULT_DASHBOARD_PORT),
  },
  { name: "show", help: "url (print the URL and keep forwarding) or none (print nothing)", default: "url" },
  { name: "kubeconfig", help: "kubeconfig file", default: "$KUBECONFIG, else ~/.kube/config" },
];

const USAGE = `usage: weft dashboard [flags]\n${flagHelp(DASHBOARD_FLAGS)}`;

export function parsePort(text: string | undefined): number {
  if (text === undefined) return DEFAULT_DASHBOARD_PORT;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) {
    throw new UsageError(`--port: "${text}" is not a port number (0..65535)`);
  }
  return n;
}

/** The Ready dashboard pod (the newest, should a rollout leave two). */
export function pickDashboardPod(pods: readonly Obj[]): string | undefined {
  const ready = pods.filter((p) => !p.metadata.deletionTimestamp && isPodReady(p));
  ready.sort((a, b) =>
    String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp))
  );
  return ready[0]?.metadata.name;
}

async function runDashboard(args: string[], ctx: CliContext): Promise<number> {
  const f = parseFlags(args, DASHBOARD_FLAGS);
  if (f.help) {
    await ctx.out(`${USAGE}\n`);
    return 0;
  }
  if (f.positionals.length) throw new UsageError(`unexpected argument "${f.positionals[0]}"`);
  const port = parsePort(f.values.get("port"));
  const show = f.values.get("show") ?? "url";
  if (show !== "url" && show !== "none") throw new UsageError(`--show: "${show}" is not url or none`);
  const kube = openKube(f, ctx);
  const ns = DEFAULT_CONTROL_PLANE_NAMESPACE;
  const pods = await kube.list<Obj>(`/api/v1/namespaces/${ns}/pods`, {
    labelSelector: "linkerd.io/control-plane-component=dashboard",
  });
  const pod = pickDashboardPod(pods);
  if (!pod) {
    ctx.err(
      `weft dashboard: no Ready dashboard pod in ${ns} (${pods.length} found); deploy the mesh (deno task deploy)`,
    );
    return 1;
  }
  let fwd;
  try {
    fwd = await portForward(kube.kc, { namespace: ns, pod, port: Ports.dashboard, localPort: port });
  } catch (e) {
    ctx.err(`weft dashboard: cannot listen on 127.0.0.1:${port}: ${(e as Error).message} (try --port)`);
    return 1;
  }
  // localhost, not 127.0.0.1: the dashboard answers only Host names it knows (DNS rebinding).
  const url = `http://localhost:${fwd.port}/overview`;
  if (show === "url") await ctx.out(`Weft dashboard available at:\n${url}\n`);
  const browser = ctx.env.BROWSER;
  if (browser && show === "url") {
    try {
      new Deno.Command(browser, { args: [url], stdin: "null", stdout: "null", stderr: "null" }).spawn()
        .unref();
    } catch (e) {
      ctx.err(`weft dashboard: $BROWSER (${browser}) did not start: ${(e as Error).message}`);
    }
  }
  ctx.err("forwarding; Ctrl-C to stop");
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    ctx.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await fwd.close();
  for (const e of new Set(fwd.errors)) ctx.err(e);
  return 0;
}

export const dashboardCommand: Command = {
  name: "dashboard",
  summary: "the web dashboard through a port-forward: prints http://localhost:50750/overview (--port)",
  run: runDashboard,
};
