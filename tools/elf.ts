/**
 * Minimal ELF64 symbol-table reader: lists the global function symbols of a cubin (its kernel entry points),
 * so the manifest can say which cubin holds which kernel without CUDA tools at run time.
 * @module
 */

/** Names of global FUNC symbols in an ELF64 little-endian image. */
export function elfFunctionSymbols(bytes: Uint8Array): string[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dv.getUint32(0, false) !== 0x7f454c46 || bytes[4] !== 2 || bytes[5] !== 1) throw new Error("not an ELF64 little-endian file");
  const shoff = Number(dv.getBigUint64(0x28, true));
  const shentsize = dv.getUint16(0x3a, true);
  const shnum = dv.getUint16(0x3c, true);
  const sec = (i: number) => {
    const o = shoff + i * shentsize;
    return {
      type: dv.getUint32(o + 4, true),
      offset: Number(dv.getBigUint64(o + 0x18, true)),
      size: Number(dv.getBigUint64(o + 0x20, true)),
      link: dv.getUint32(o + 0x28, true),
      entsize: Number(dv.getBigUint64(o + 0x38, true)),
    };
  };
  const out: string[] = [];
  for (let i = 0; i < shnum; i++) {
    const s = sec(i);
    if (s.type !== 2) continue; // SHT_SYMTAB
    const str = sec(s.link);
    for (let o = s.offset; o + 24 <= s.offset + s.size; o += s.entsize || 24) {
      const info = bytes[o + 4];
      if ((info & 0xf) !== 2 || info >> 4 !== 1) continue; // STT_FUNC, STB_GLOBAL
      let p = str.offset + dv.getUint32(o, true);
      let name = "";
      while (bytes[p] !== 0) name += String.fromCharCode(bytes[p++]);
      out.push(name);
    }
  }
  return out.sort();
}
