/**
 * What the outbound side needs from a Destination.GetProfile message, converted once per update
 * where discovery receives it: whether the profile makes the port opaque, and the compiled
 * profile (routes, retries, timeouts, dst_overrides). The stacks read this, never the message.
 */
import type { DestinationProfile } from "../../proto/gen_messages/destination.ts";
import type { Clock } from "../../proto/support/clock.ts";
import { type CompiledProfile, compileProfile } from "../route/profile.ts";

export interface ProfileView {
  readonly opaqueProtocol: boolean;
  readonly fullyQualifiedName: string;
  /** After an update that does not compile, the previous profile (and `error` says why). */
  readonly compiled: CompiledProfile | undefined;
  readonly error: string | undefined;
}

export function profileView(
  prev: ProfileView | undefined,
  msg: DestinationProfile,
  clock: Clock,
): ProfileView {
  let compiled = prev?.compiled;
  let error: string | undefined;
  try {
    compiled = compileProfile(msg, clock);
  } catch (e) {
    error = (e as Error).message;
  }
  return { opaqueProtocol: msg.opaqueProtocol, fullyQualifiedName: msg.fullyQualifiedName, compiled, error };
}
