/**
 * The few things the library asks of its host runtime (Deno or Bun), without requiring permissions on the
 * CPU path: environment variables are read only when the permission is already granted.
 * @module
 */

interface DenoLike {
  env: { get(k: string): string | undefined };
  permissions?: { querySync?(d: { name: string; variable?: string }): { state: string } };
}
interface ProcessLike {
  env: Record<string, string | undefined>;
}

/** "deno", "bun" or "other". */
export const runtimeName: "deno" | "bun" | "other" = "Bun" in globalThis
  ? "bun"
  : "Deno" in globalThis
  ? "deno"
  : "other";

/** An environment variable, or undefined when unset or not readable without a permission prompt. */
export function getEnv(name: string): string | undefined {
  const g = globalThis as unknown as { Deno?: DenoLike; process?: ProcessLike };
  if (runtimeName === "deno" && g.Deno) {
    try {
      const st = g.Deno.permissions?.querySync?.({ name: "env", variable: name });
      if (st && st.state !== "granted") return undefined;
      return g.Deno.env.get(name);
    } catch {
      return undefined;
    }
  }
  return g.process?.env[name];
}
