// The worker's Kafka ACLs are one list (src/kafka/worker-acls.ts): the README's table is that list, the worker needs
// no Cluster permission and creates nothing, and a refusal is explained with the ACLs that cover it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  explainKafkaAccess,
  kafkaAuthorizationFailure,
  transactionalIdOf,
  workerAcls,
} from '../../../src/kafka/worker-acls.ts';

const placeholders = {
  commands: '<TOPIC_COMMANDS>',
  events: '<TOPIC_EVENTS>',
  state: '<TOPIC_STATE>',
  consumerGroup: '<CONSUMER_GROUP>',
};

function readmeAclRows(): string[][] {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('### Kafka ACLs'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| resource')));
  return table
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| resource') && !line.startsWith('| ---'))
    .map((line) =>
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
}

describe('the Kafka ACLs of the worker', () => {
  it('are the README table, row for row', () => {
    expect(readmeAclRows()).toEqual(
      workerAcls(placeholders).map((acl) => [
        acl.resourceType,
        acl.patternType,
        `\`${acl.name}\``,
        acl.operation,
        acl.why,
      ]),
    );
  });

  it('grant nothing on the cluster and nothing to create, and cover the transactional id every replica takes', () => {
    const acls = workerAcls(placeholders);
    expect(acls.map((acl) => acl.resourceType)).not.toContain('Cluster');
    expect(acls.map((acl) => String(acl.operation))).not.toContain('Create');
    const id = transactionalIdOf('<CONSUMER_GROUP>', 'worker-0');
    expect(
      acls.some(
        (acl) =>
          acl.resourceType === 'TransactionalId' && acl.patternType === 'PREFIXED' && id.startsWith(acl.name),
      ),
    ).toBe(true);
  });

  it('explain a refusal found anywhere in a kafkajs error with the ACLs of its resource, and nothing else', () => {
    const acls = workerAcls({ commands: 'c', events: 'e', state: 'c.state', consumerGroup: 'g' });
    const refused = {
      name: 'KafkaJSNonRetriableError',
      originalError: { type: 'GROUP_AUTHORIZATION_FAILED' },
    };
    expect(kafkaAuthorizationFailure(refused)).toBe('GROUP_AUTHORIZATION_FAILED');
    expect(explainKafkaAccess(refused, acls)).toBe(
      'Kafka refused the worker\'s principal: GROUP_AUTHORIZATION_FAILED. It needs Read on Group literal "g", ' +
        'Read on Group prefixed "c.state.reader." (README, "Kafka ACLs")',
    );
    const creation = { name: 'KafkaJSAggregateError', errors: [{ type: 'CLUSTER_AUTHORIZATION_FAILED' }] };
    expect(explainKafkaAccess(creation, acls)).toContain(
      'a topic is missing and the worker may not create it',
    );
    expect(explainKafkaAccess({ type: 'NOT_COORDINATOR' }, acls)).toBeUndefined();
    expect(explainKafkaAccess(new Error('Connection error'), acls)).toBeUndefined();
  });
});
