/**
 * The port list annotations the destination reads (`config.linkerd.io/opaque-ports`,
 * `skip-inbound-ports`), parsed with the shared grammar (proto/port_list.ts) and cached per text:
 * the same value recurs on every pod of a workload. As Linkerd's destination does, a bad entry is
 * logged (once per distinct value) and ignored; the good entries of the same value still apply.
 */
import { Annotations } from "../../proto/annotations.ts";
import { type PortList, portListCache, type PortListError } from "../../proto/port_list.ts";

export { portListHas } from "../../proto/port_list.ts";

function warn(errors: PortListError[]): void {
  for (const e of errors) console.error(`destination: ${e.message}; entry ignored`);
}

export const opaquePortList: (text: string) => PortList = portListCache(Annotations.opaquePorts, warn);
export const skipInboundPortList: (text: string) => PortList = portListCache(
  Annotations.skipInboundPorts,
  warn,
);
