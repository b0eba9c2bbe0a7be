/**
 * The `config.linkerd.io/opaque-ports` annotation as the policy controller reads it, on pods and
 * namespaces (inbound) and on Services (outbound), with the shared grammar of proto/port_list.ts.
 */
import { Annotations } from "../../proto/annotations.ts";
import { portListCache, portListHas } from "../../proto/port_list.ts";

// As Linkerd's policy controller: a bad entry is logged (once per distinct value) and ignored,
// the value's good entries still apply.
const opaquePortList = portListCache(Annotations.opaquePorts, (errors) => {
  for (const e of errors) console.error(`policy: ${e.message}; entry ignored`);
});

/** Whether an opaque-ports annotation (`25,4000-4100,mysql`) lists `port`; names via `portOfName`. */
export function opaquePortsInclude(
  text: string,
  port: number,
  portOfName: (name: string) => number | undefined,
): boolean {
  return portListHas(opaquePortList(text), port, portOfName);
}
