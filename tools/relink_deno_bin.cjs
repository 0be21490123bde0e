// npm postinstall of the dev toolchain: deno's own postinstall points node_modules/.bin/deno at the raw binary
// inside node_modules/deno/, which `deno task` then mistakes for a JavaScript bin and fails to run. Pointing the
// link back at the package's declared bin (bin.cjs, which execs the same binary) keeps `deno task` working.
const fs = require("fs");
const path = require("path");
const link = path.join(__dirname, "..", "node_modules", ".bin", "deno");
try {
  if (fs.readlinkSync(link) !== "../deno/bin.cjs") {
    fs.unlinkSync(link);
    fs.symlinkSync("../deno/bin.cjs", link);
  }
} catch {
  // no deno in node_modules (or not a link): nothing to do
}
