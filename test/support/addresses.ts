// Valid withdrawal addresses for tests and benchmarks: EIP-55 examples from the EIP, and the BIP-173 example.
export const addresses = {
  eth: '0x52908400098527886E0F7030069857D2E4169EE7',
  eth2: '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
  btc: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
};
