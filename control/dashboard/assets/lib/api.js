// The dashboard's JSON API, GET only (the server refuses anything else).
import { errorBox } from "./dom.js";

export class ApiFailure extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** GET /api/<name>?params as JSON; a non-2xx answer throws with the server's message. */
export async function getJSON(name, params = {}, signal) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const res = await fetch(`/api/${name}${q.size ? `?${q}` : ""}`, {
    signal,
    headers: { Accept: "application/json" },
  });
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiFailure(res.status, `/api/${name}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new ApiFailure(res.status, body?.error ?? `HTTP ${res.status}`);
  return body;
}

/**
 * A page section's data: the endpoint's JSON, or undefined once the failure is shown in the section under its
 * heading (its first child), tagged `test` for the browser tests. A page that was left is not a failure.
 */
export async function sectionData(section, name, params, signal, test) {
  try {
    return await getJSON(name, params, signal);
  } catch (e) {
    if (!signal.aborted) section.replaceChildren(section.firstChild, errorBox(e.message, test));
    return undefined;
  }
}
