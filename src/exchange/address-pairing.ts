// The address and chain pairing check a careful client makes before quoting (the exchange validates addresses only
// per currency format, so a valid EVM address meant for another EVM chain passes there): is the stated network one
// the currency is on, and is the address well formed, checksum included, for that network. Pure: the catalogue
// snapshot comes in as an argument; the first problem found is the answer.
import addressValidator from 'multicoin-address-validator';
import type { CatalogCurrency, CatalogNetwork, CatalogSnapshot } from './currency-catalog.ts';

/** The order.create fields the check reads (an OrderCreateCommand satisfies it). */
export interface AddressPairingRequest {
  readonly deposit_currency: string;
  readonly withdraw_currency: string;
  readonly withdraw_address: string;
  readonly withdraw_network?: string | undefined;
  readonly refund_address?: string | undefined;
  readonly refund_network?: string | undefined;
}

/** The `reason` an order fails with (order.failed) when the check refuses it; the specific cause is the `code`. */
export const ADDRESS_PAIRING_FAILURE_REASON = 'address_pairing_rejected';

const problems = [
  /** The exchange's catalogue has no such currency. */
  'currency_unknown',
  /** The stated network is not in the exchange's network records. */
  'network_unknown',
  /** The currency is not on the stated network (or its record names no network to compare with). */
  'network_mismatch',
  /** No network was stated and the currency is on several: which chain the address is for is unknown. */
  'network_required',
  /** The address is not a well-formed address of the network (format or checksum). */
  'address_invalid',
] as const;
type Problem = (typeof problems)[number];
type Side = 'withdraw' | 'refund';

export const addressPairingReasons = (['withdraw', 'refund'] as const).flatMap((side) =>
  problems.map((problem) => `${side}_${problem}` as const),
);
export type AddressPairingReason = `${Side}_${Problem}`;

export type AddressPairingResult =
  | {
      readonly ok: true;
      /** The network each address was checked for (stated, or the currency's only one); null when none. */
      readonly withdrawNetwork: string | null;
      readonly refundNetwork: string | null;
      /** What could not be verified (no network to check against, no format known); for logs, not a refusal. */
      readonly unchecked: readonly string[];
    }
  | { readonly ok: false; readonly reason: AddressPairingReason; readonly message: string };

interface AddressFamily {
  /** multicoin-address-validator currency symbol whose validator checks this family (checksums included). */
  readonly validator: string;
  readonly describe: string;
  /** Names of the family besides its key and its validator symbol, in `address_format` or as a network's name. */
  readonly aliases?: readonly string[];
}

/** Address families the library validates. A family is known by its key, its validator symbol and its aliases. */
const families: Readonly<Record<string, AddressFamily>> = {
  evm: {
    validator: 'eth',
    describe: 'an EVM address: 0x and 40 hex digits, mixed case only with a valid EIP-55 checksum',
    // EVM chains and token standards: one address form on all of them
    aliases: [
      'ethereum',
      'erc20',
      'bsc',
      'bep20',
      'polygon',
      'matic',
      'arbitrum',
      'arb',
      'optimism',
      'op',
      'base',
      'avaxc',
      'avax-c',
      'avax_c',
      'fantom',
      'ftm',
      'etc',
      'linea',
      'zksync',
      'scroll',
      'celo',
      'gnosis',
    ],
  },
  bitcoin: {
    validator: 'btc',
    describe: 'a Bitcoin address: base58check (1…, 3…) or bech32/bech32m (bc1…)',
  },
  litecoin: {
    validator: 'ltc',
    describe: 'a Litecoin address: base58check (L…, M…) or bech32 (ltc1…)',
  },
  dogecoin: { validator: 'doge', describe: 'a Dogecoin address: base58check (D…, A…, 9…)' },
  tron: {
    validator: 'trx',
    describe: 'a Tron address: base58check T… (34 characters)',
    aliases: ['trc20'],
  },
  ripple: { validator: 'xrp', describe: 'an XRP Ledger address: r… with a valid checksum' },
  bitcoincash: { validator: 'bch', describe: 'a Bitcoin Cash address (cashaddr or legacy base58check)' },
  solana: { validator: 'sol', describe: 'a Solana address: base58, 32 bytes' },
  stellar: { validator: 'xlm', describe: 'a Stellar address: G… with a valid checksum' },
  cardano: { validator: 'ada', describe: 'a Cardano address' },
  polkadot: { validator: 'dot', describe: 'a Polkadot address (SS58)' },
  algorand: { validator: 'algo', describe: 'an Algorand address' },
  tezos: { validator: 'xtz', describe: 'a Tezos address' },
  dash: { validator: 'dash', describe: 'a Dash address' },
  zcash: { validator: 'zec', describe: 'a Zcash transparent address' },
  monero: { validator: 'xmr', describe: 'a Monero address' },
};

/** Every name of every family (a Map: a record or network name such as "constructor" is no family). */
const familiesByName: ReadonlyMap<string, AddressFamily> = new Map(
  Object.entries(families).flatMap(([key, family]) =>
    [key, family.validator, ...(family.aliases ?? [])].map((name) => [name, family] as const),
  ),
);

function familyNamed(name: string | null): AddressFamily | undefined {
  return name === null ? undefined : familiesByName.get(name.trim().toLowerCase());
}

/**
 * The family of a network's addresses: the record's `address_format` when it names one we know, else `is_evm`,
 * else the network's name when it is a well-known chain. Undefined when none applies (then only the record's
 * `address_regex`, if any, is checked).
 */
export function addressFamilyOf(network: CatalogNetwork): AddressFamily | undefined {
  return (
    familyNamed(network.addressFormat) ??
    (network.isEvm ? families['evm'] : undefined) ??
    familyNamed(network.name)
  );
}

function isValidFor(family: AddressFamily, address: string): boolean {
  try {
    return addressValidator.validate(address, family.validator, { networkType: 'prod' });
  } catch {
    return false; // the library throws on some malformed input instead of answering false
  }
}

interface SideInput {
  readonly side: Side;
  readonly currencyCode: string;
  readonly address: string;
  readonly statedNetwork: string | undefined;
}

type SideResult =
  | { readonly ok: true; readonly network: string | null; readonly unchecked: readonly string[] }
  | { readonly ok: false; readonly reason: AddressPairingReason; readonly message: string };

function refuse(side: Side, problem: Problem, message: string): SideResult {
  return { ok: false, reason: `${side}_${problem}`, message };
}

/**
 * Names one network goes by with one client or another (the live exchange lists Tron as TRON, clients and our
 * sandbox say TRX): a stated name the exchange does not list is read as its alias when the exchange lists that.
 * Only names that cannot mean another chain are here.
 */
const networkAliases: ReadonlyMap<string, readonly string[]> = new Map([
  ['TRX', ['TRON']],
  ['TRON', ['TRX']],
]);

/** The stated network as the exchange names it: itself when listed (upper case), else a listed alias of it. */
function networkAsListed(stated: string, listed: readonly string[], catalog: CatalogSnapshot): string {
  const name = stated.trim().toUpperCase();
  const known = (candidate: string): boolean =>
    listed.includes(candidate) || catalog.network(candidate) !== undefined;
  if (known(name)) return name;
  return networkAliases.get(name)?.find(known) ?? name;
}

/** Which network the address is for: the stated one (when the currency is on it), or the currency's only one. */
function pairedNetwork(
  input: SideInput,
  currency: CatalogCurrency,
  catalog: CatalogSnapshot,
): { network: CatalogNetwork | null; name: string | null } | SideResult {
  const { side } = input;
  const field = `${side}_network`;
  const listed = currency.networks.map((n) => n.network);
  if (input.statedNetwork !== undefined) {
    const stated = networkAsListed(input.statedNetwork, listed, catalog);
    const network = catalog.network(stated);
    if (listed.includes(stated)) return { network: network ?? null, name: stated };
    if (network === undefined)
      return refuse(side, 'network_unknown', `${field} ${stated} is not a network the exchange lists`);
    if (listed.length === 0) {
      return refuse(
        side,
        'network_mismatch',
        `the exchange's record of ${currency.code} names no network, so ${field} ${stated} cannot be verified`,
      );
    }
    return refuse(
      side,
      'network_mismatch',
      `${currency.code} is not on network ${stated} (${field}); the exchange has it on ${listed.join(', ')}`,
    );
  }
  if (listed.length > 1) {
    return refuse(
      side,
      'network_required',
      `${currency.code} is on several networks (${listed.join(', ')}): ${field} must say which one the ${side} address is for`,
    );
  }
  const only = listed[0];
  if (only === undefined) return { network: null, name: null };
  return { network: catalog.network(only) ?? null, name: only };
}

function checkSide(input: SideInput, catalog: CatalogSnapshot): SideResult {
  const { side, address } = input;
  const currencyField = side === 'withdraw' ? 'withdraw_currency' : 'deposit_currency';
  const currency = catalog.currency(input.currencyCode);
  if (currency === undefined) {
    return refuse(
      side,
      'currency_unknown',
      `${currencyField} ${input.currencyCode.toUpperCase()} is not in the exchange's currency list`,
    );
  }
  const paired = pairedNetwork(input, currency, catalog);
  if ('ok' in paired) return paired;
  const unchecked: string[] = [];
  if (paired.name === null) {
    unchecked.push(`${side}: ${currency.code} lists no network; the ${side} address format was not checked`);
    return { ok: true, network: null, unchecked };
  }
  if (paired.network === null) {
    unchecked.push(
      `${side}: network ${paired.name} has no network record; its address format was not checked`,
    );
    return { ok: true, network: paired.name, unchecked };
  }
  const network = paired.network;
  const family = addressFamilyOf(network);
  if (family !== undefined && !isValidFor(family, address)) {
    return refuse(
      side,
      'address_invalid',
      `${side}_address ${address} is not valid on network ${network.name}: expected ${family.describe}`,
    );
  }
  if (network.addressRegex !== null) {
    let pattern: RegExp | undefined;
    try {
      pattern = new RegExp(network.addressRegex);
    } catch {
      unchecked.push(
        `${side}: network ${network.name} publishes an address_regex that is not a valid pattern`,
      );
    }
    if (pattern !== undefined && !pattern.test(address)) {
      return refuse(
        side,
        'address_invalid',
        `${side}_address ${address} does not match the address pattern of network ${network.name}`,
      );
    }
  }
  if (family === undefined && network.addressRegex === null)
    unchecked.push(`${side}: no address format is known for network ${network.name}`);
  return { ok: true, network: network.name, unchecked };
}

/**
 * Checks the withdraw address (withdraw currency) and, when given, the refund address (deposit currency, which a
 * refund returns) against the catalogue. Call it before any quote is requested; a refusal names the side and the
 * problem in `reason` and says what is wrong in `message`.
 */
export function checkAddressPairing(
  request: AddressPairingRequest,
  catalog: CatalogSnapshot,
): AddressPairingResult {
  const withdraw = checkSide(
    {
      side: 'withdraw',
      currencyCode: request.withdraw_currency,
      address: request.withdraw_address,
      statedNetwork: request.withdraw_network,
    },
    catalog,
  );
  if (!withdraw.ok) return withdraw;
  if (request.refund_address === undefined)
    return {
      ok: true,
      withdrawNetwork: withdraw.network,
      refundNetwork: null,
      unchecked: withdraw.unchecked,
    };
  const refund = checkSide(
    {
      side: 'refund',
      currencyCode: request.deposit_currency,
      address: request.refund_address,
      statedNetwork: request.refund_network,
    },
    catalog,
  );
  if (!refund.ok) return refund;
  return {
    ok: true,
    withdrawNetwork: withdraw.network,
    refundNetwork: refund.network,
    unchecked: [...withdraw.unchecked, ...refund.unchecked],
  };
}
