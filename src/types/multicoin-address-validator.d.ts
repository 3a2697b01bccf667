// The subset of multicoin-address-validator (CommonJS, no bundled types) that src/exchange/address-pairing.ts uses.
declare module 'multicoin-address-validator' {
  interface ValidateOptions {
    /** 'prod' (mainnet), 'testnet' or 'both'. */
    readonly networkType?: 'prod' | 'testnet' | 'both';
  }
  interface CurrencyInfo {
    readonly name: string;
    readonly symbol: string;
  }
  interface Validator {
    /** Throws "Missing validator for currency" for a name or symbol it does not know. */
    validate(address: string, currencyNameOrSymbol: string, options?: ValidateOptions): boolean;
    findCurrency(symbol: string): CurrencyInfo | null;
  }
  const validator: Validator;
  export default validator;
}
