/**
 * The roofline cases of bench/cases_more.ts run on the GPU only, where an argument check that trips would cost a row
 * of the table. Here every call of those cases runs once through the CPU references at 256 tokens (swigluForward's
 * psum layout needs 64 experts × 128 rows, so it runs at 8192), so a change of an op's checks or options that
 * breaks a benchmark shows up in CI.
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./harness.ts";
import { casesOn } from "../bench/cases_more.ts";

test("every cases_more.ts benchmark call passes the op's checks and runs on the CPU reference", () => {
  const cases = casesOn([256], "cpu").filter((c) => c.op !== "swigluForward");
  assert.ok(cases.length >= 19, `expected at least 19 cases, got ${cases.length}`);
  for (const c of cases) {
    assert.ok(c.bytes > 0, `${c.op} ${c.variant}: bytes ${c.bytes}`);
    try {
      c.run();
    } catch (e) {
      throw new Error(`${c.op} ${c.variant} (256 tokens): ${(e as Error).message}`);
    } finally {
      c.dispose();
    }
  }
});
