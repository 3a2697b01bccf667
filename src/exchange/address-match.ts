// Whether two spellings name the same address. The exchange validates addresses per currency format and may store
// them normalised (lower-case hex, lower-case bech32), so comparing what we sent with what it returns as exact
// strings would miss our own order. Formats whose encoding ignores case compare case-insensitively; every other
// format (base58, memo-style ids, unknown formats) must match exactly, because there case changes the address.

/** EVM hex addresses: the EIP-55 checksum lives in the case, the address itself does not. */
const evmHex = /^0x[0-9a-f]{40}$/i;
/** Bech32/bech32m (BIP-173): one case throughout, the human-readable part, "1", then the data part. */
const bech32 = /^[a-z]{1,83}1[02-9ac-hj-np-z]{6,}$/i;

function isCaseInsensitiveFormat(address: string): boolean {
  return (
    evmHex.test(address) ||
    (bech32.test(address) && (address === address.toLowerCase() || address === address.toUpperCase()))
  );
}

export function sameAddress(a: string, b: string): boolean {
  const left = a.trim();
  const right = b.trim();
  if (left === right) return true;
  if (left.toLowerCase() !== right.toLowerCase()) return false;
  return isCaseInsensitiveFormat(left) && isCaseInsensitiveFormat(right);
}
