// Reading a topic's metadata while another replica's creation of it is still spreading (the broker side of topic
// creation is in the integration tier).
import { describe, expect, it } from 'vitest';
import { whenKnown } from '../../../src/kafka/topics.ts';

const unknownTopic = () =>
  Object.assign(new Error('This server does not host this topic-partition'), {
    name: 'KafkaJSProtocolError',
    type: 'UNKNOWN_TOPIC_OR_PARTITION',
  });

describe('topic metadata right after creation', () => {
  it('retries while the broker does not know the topic yet, then answers', async () => {
    let calls = 0;
    const read = () => (++calls < 3 ? Promise.reject(unknownTopic()) : Promise.resolve({ partitions: 4 }));
    await expect(whenKnown(read)).resolves.toEqual({ partitions: 4 });
    expect(calls).toBe(3);
  });

  it('gives up after its timeout, and at once on any other error', async () => {
    await expect(whenKnown(() => Promise.reject(unknownTopic()), 150)).rejects.toThrow('does not host');
    let calls = 0;
    const denied = () => {
      calls++;
      return Promise.reject(Object.assign(new Error('denied'), { type: 'TOPIC_AUTHORIZATION_FAILED' }));
    };
    await expect(whenKnown(denied)).rejects.toThrow('denied');
    expect(calls).toBe(1);
  });
});
