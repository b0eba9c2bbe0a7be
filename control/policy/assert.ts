/** Assertions for the policy tests (node:assert, as JSR's std is unreachable). */
import assert from "node:assert/strict";

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  assert.deepStrictEqual(actual, expected, message);
}

// deno-lint-ignore no-explicit-any
export function assertThrows<E extends Error>(fn: () => unknown, type?: new (...args: any[]) => E): E {
  try {
    fn();
  } catch (e) {
    if (type && !(e instanceof type)) throw new Error(`want ${type.name}, got ${e}`);
    return e as E;
  }
  throw new Error("expected a throw");
}

export async function assertRejects<E extends Error>(
  fn: () => Promise<unknown>,
  // deno-lint-ignore no-explicit-any
  type?: new (...args: any[]) => E,
): Promise<E> {
  try {
    await fn();
  } catch (e) {
    if (type && !(e instanceof type)) throw new Error(`want ${type.name}, got ${e}`);
    return e as E;
  }
  throw new Error("expected a rejection");
}
