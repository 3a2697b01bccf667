// docs/asyncapi.json is a valid AsyncAPI 3 document (checked by the AsyncAPI initiative's own parser, offline), each
// of its messages has an example, and every example is valid three ways: by the zod schema it was generated from,
// by the message's draft-07 payload schema in the document, and by the 2020-12 schema under docs/schemas/ - its
// headers by the message's headers schema too.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Parser } from '@asyncapi/parser';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { commandAnswers } from '../../../src/contract/command-answers.ts';
import { asyncApiDocument, commandSchemas, eventSchemas, messageId } from '../../../src/contract/asyncapi.ts';
import { rejectionReasons } from '../../../src/contract/events.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const published = JSON.parse(readFileSync(join(root, 'docs', 'asyncapi.json'), 'utf8')) as ReturnType<
  typeof asyncApiDocument
>;

interface Message {
  name: string;
  headers?: object;
  payload: { schemaFormat: string; schema: object } | object;
  examples?: Array<{ headers: Record<string, string>; payload: Record<string, unknown> }>;
}
const messages = (published['components'] as { messages: Record<string, Message> }).messages;
const schemas = { ...commandSchemas, ...eventSchemas } as Record<
  string,
  { safeParse(v: unknown): { success: boolean; error?: unknown } }
>;

async function diagnosticsOf(
  document: unknown,
): Promise<Array<{ severity: number; code: string | number; message: string }>> {
  const { diagnostics } = await new Parser().parse(JSON.stringify(document));
  return diagnostics.map(({ severity, code, message }) => ({ severity, code, message }));
}

describe('the AsyncAPI document', () => {
  it('is what the generator writes', () => {
    expect(published).toEqual(JSON.parse(JSON.stringify(asyncApiDocument())));
  });

  it('parses as AsyncAPI 3 with no error, warning or note', async () => {
    expect(published['asyncapi']).toMatch(/^3\./);
    expect(await diagnosticsOf(published)).toEqual([]);
  });

  it('is refused by the same parser when a Kafka binding is wrong (the check can fail)', async () => {
    const broken = structuredClone(published) as {
      channels: { commands: { bindings: { kafka: { partitions: number } } } };
    };
    broken.channels.commands.bindings.kafka.partitions = 0;
    const errors = (await diagnosticsOf(broken)).filter((d) => d.severity === 0);
    expect(errors.map((d) => d.message)).toContain('"partitions" property must be >= 1');
  });

  it('has a message, with headers and one example, for every command and event type of the contract', () => {
    for (const type of Object.keys(schemas)) {
      const message = messages[messageId(type)];
      expect(message?.name, type).toBe(type);
      expect(message?.headers, type).toBeDefined();
      expect(message?.examples, type).toHaveLength(1);
    }
  });

  it('says which events answer which command, as the host stamps them', () => {
    for (const [type, answer] of Object.entries(commandAnswers)) {
      expect(messages[messageId(type)]?.['summary' as keyof Message]).toContain(answer.description);
      for (const event of answer.answeredBy)
        expect(messages[messageId(event)]?.['summary' as keyof Message], event).toContain(type);
    }
  });

  const ajv07 = new Ajv({ strict: false, allErrors: true });
  const ajv2020 = new Ajv2020({ strict: false, allErrors: true });

  it('requires the operator signature headers on order.settle, and on no command a trading service sends', () => {
    const settle = messages[messageId('order.settle')]!;
    const byHeaders = ajv07.compile(settle.headers!);
    const { 'operator-signature': _signature, ...unsigned } = settle.examples![0]!.headers;
    expect(byHeaders(unsigned)).toBe(false);
    expect(ajv07.errorsText(byHeaders.errors)).toContain('operator-signature');
    for (const type of ['order.create', 'order.submit_deposit', 'order.cancel'])
      expect(ajv07.compile(messages[messageId(type)]!.headers!)({}), type).toBe(true);
  });
  it.each(Object.keys(schemas))('has an example of %s that its schemas accept', (type) => {
    const message = messages[messageId(type)]!;
    const [example] = message.examples!;
    expect(schemas[type]!.safeParse(example!.payload).error).toBeUndefined();
    const payload = message.payload as { schemaFormat: string; schema: object };
    expect(payload.schemaFormat).toBe('application/schema+json;version=draft-07');
    const byPayload = ajv07.compile(payload.schema);
    expect(byPayload(example!.payload), ajv07.errorsText(byPayload.errors)).toBe(true);
    const file = JSON.parse(readFileSync(join(root, 'docs', 'schemas', `${type}.json`), 'utf8')) as object;
    const byFile = ajv2020.compile(file);
    expect(byFile(example!.payload), ajv2020.errorsText(byFile.errors)).toBe(true);
    const byHeaders = ajv07.compile(message.headers!);
    expect(byHeaders(example!.headers), ajv07.errorsText(byHeaders.errors)).toBe(true);
    // And the schemas are not so loose that anything passes: a wrong type field is refused.
    expect(byPayload({ ...example!.payload, type: 'not.a.type' })).toBe(false);
  });
});

describe("the README's Kafka contract section", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Kafka contract'), readme.indexOf('## Architecture'));
  const firstColumn = (heading: string): string[] => {
    const start = section.indexOf(heading);
    const table =
      section
        .slice(start)
        .split('\n\n')
        .find((block) => block.startsWith('|')) ?? '';
    return table
      .split('\n')
      .slice(2)
      .map((row) => /^\| `([^`]+)`/.exec(row)?.[1] ?? '')
      .filter(Boolean);
  };

  it('lists the same commands, events and rejection reasons as the contract', () => {
    expect(firstColumn('### Commands').sort()).toEqual(Object.keys(commandSchemas).sort());
    expect(firstColumn('| type                          |').sort()).toEqual(Object.keys(eventSchemas).sort());
    expect(firstColumn('`command.rejected` reasons').sort()).toEqual([...rejectionReasons].sort());
  });

  it("carries the contract's rules as the AsyncAPI document states them", () => {
    const description = String((published['info'] as { description: string }).description);
    for (const title of ['Keys and partitions', 'Headers', 'Deduplication', 'Ordering', 'Versioning'])
      expect(section).toContain(`**${title}.**`);
    // The generator writes the same text into both (scripts/generate-contract-docs.ts --check keeps them equal).
    const generated = /<!-- contract rules: begin[^>]*-->\n([\s\S]*?)\n<!-- contract rules: end -->/.exec(
      section,
    )?.[1];
    expect(generated).toBeDefined();
    expect(description.replace(/\s+/g, ' ')).toContain(generated!.replace(/\s+/g, ' ').trim());
  });
});
