// cluster-key-slot (CommonJS, no bundled types): the hash slot function ioredis itself routes Cluster commands with.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0-16383) of a key: CRC16 of its hash tag (`{...}`) if it has one, else of the key. */
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
