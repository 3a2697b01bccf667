// A small kustomize renderer for tests, limited to the features deploy/k8s uses: `resources` (files and
// directories), `namespace`, `images`, `configMapGenerator` (literals, files, behavior create/merge; the generated
// name gets kustomize's content hash, `<name>-<hash>`, computed once every overlay merged into it, and the pod
// templates' references follow it, unless generatorOptions.disableNameSuffixHash) and `patches` (JSON 6902
// operations, inline or from a file, with a kind/name target). Anything else in a kustomization makes it throw: it never silently renders less than kustomize
// would. Where kubectl is installed, test/unit/deploy/k8s-manifests.test.ts compares its output with
// `kubectl kustomize`; CI machines without kubectl rely on this renderer alone.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

const supportedKeys = new Set([
  'apiVersion',
  'kind',
  'resources',
  'namespace',
  'images',
  'configMapGenerator',
  'generatorOptions',
  'patches',
]);
const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

interface Kustomization {
  resources?: string[];
  namespace?: string;
  images?: Array<{ name: string; newName?: string; newTag?: string; digest?: string }>;
  configMapGenerator?: Array<{
    name: string;
    behavior?: 'create' | 'merge';
    literals?: string[];
    files?: string[];
  }>;
  generatorOptions?: { disableNameSuffixHash?: boolean };
  patches?: Array<{ target: { kind: string; name: string }; patch?: string; path?: string }>;
}

type JsonPatchOp = { op: 'add' | 'replace' | 'remove'; path: string; value?: unknown };

function readDocuments(file: string): K8sObject[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((doc): doc is K8sObject => doc !== null);
}

function pointer(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export function applyJsonPatch(target: unknown, ops: JsonPatchOp[]): void {
  for (const op of ops) {
    const parts = pointer(op.path);
    const last = parts.pop();
    if (last === undefined) throw new Error(`patch path ${op.path} names the document itself`);
    let node: unknown = target;
    for (const part of parts) {
      node = Array.isArray(node) ? node[Number(part)] : (node as Record<string, unknown>)[part];
      if (node === undefined || node === null)
        throw new Error(`patch path ${op.path}: ${part} does not exist`);
    }
    if (Array.isArray(node)) {
      const index = last === '-' ? node.length : Number(last);
      if (op.op === 'add') node.splice(index, 0, structuredClone(op.value));
      else if (op.op === 'replace') node[index] = structuredClone(op.value);
      else node.splice(index, 1);
    } else {
      const record = node as Record<string, unknown>;
      if (op.op !== 'add' && !(last in record)) throw new Error(`patch path ${op.path} does not exist`);
      if (op.op === 'remove') delete record[last];
      else record[last] = structuredClone(op.value);
    }
  }
}

function imageName(image: string): string {
  const at = image.indexOf('@');
  const withoutDigest = at >= 0 ? image.slice(0, at) : image;
  const colon = withoutDigest.lastIndexOf(':');
  return colon > withoutDigest.lastIndexOf('/') ? withoutDigest.slice(0, colon) : withoutDigest;
}

function podSpecs(object: K8sObject): Array<Record<string, unknown>> {
  const spec = object['spec'] as Record<string, unknown> | undefined;
  const template = spec?.['template'] as { spec?: Record<string, unknown> } | undefined;
  if (template?.spec) return [template.spec];
  return [];
}

/** Generated ConfigMaps whose name gets the content hash once the whole tree is rendered. */
const needsHash = new WeakSet<K8sObject>();

/**
 * kustomize's name suffix for a generated ConfigMap: the SHA-256 of the JSON of {data, kind, name} (keys sorted, and
 * HTML-escaped as Go's encoding/json does), its first 10 hex digits with 0, 1, 3, a and e replaced by g, h, k, m
 * and t. The name in it is empty: kustomize (v5) looks `metadata/name` up as one field name and finds none, so two
 * generated ConfigMaps with the same data get the same suffix (checked against `kubectl kustomize`).
 */
export function configMapHash(data: Record<string, string>): string {
  const sorted = Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const json = JSON.stringify({ data: sorted, kind: 'ConfigMap', name: '' }).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  const swap: Record<string, string> = { '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' };
  return [...createHash('sha256').update(json).digest('hex').slice(0, 10)].map((c) => swap[c] ?? c).join('');
}

interface ConfigMapRefs {
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  env?: Array<{ valueFrom?: { configMapKeyRef?: { name: string } } }>;
}

/** Gives each hashed ConfigMap its final name and points every pod template's reference at it. */
function applyNameHashes(objects: K8sObject[]): void {
  const renamed = new Map<string, string>();
  for (const object of objects) {
    if (!needsHash.has(object)) continue;
    const name = object.metadata.name;
    object.metadata.name = `${name}-${configMapHash((object['data'] ?? {}) as Record<string, string>)}`;
    renamed.set(name, object.metadata.name);
  }
  const follow = (ref: { name: string } | undefined): void => {
    if (ref && renamed.has(ref.name)) ref.name = renamed.get(ref.name) as string;
  };
  for (const object of objects)
    for (const spec of podSpecs(object)) {
      for (const list of ['containers', 'initContainers'])
        for (const container of (spec[list] as ConfigMapRefs[] | undefined) ?? []) {
          for (const from of container.envFrom ?? []) follow(from.configMapRef);
          for (const env of container.env ?? []) follow(env.valueFrom?.configMapKeyRef);
        }
      for (const volume of (spec['volumes'] as Array<{ configMap?: { name: string } }> | undefined) ?? [])
        follow(volume.configMap);
    }
}

/** Renders the kustomization in `dir` like `kubectl kustomize dir` (within the supported features). */
export function renderKustomization(dir: string): K8sObject[] {
  const objects = renderTree(dir);
  applyNameHashes(objects);
  return objects;
}

function renderTree(dir: string): K8sObject[] {
  const file = join(dir, 'kustomization.yaml');
  const kustomization = parseYaml(readFileSync(file, 'utf8')) as Kustomization & Record<string, unknown>;
  for (const key of Object.keys(kustomization))
    if (!supportedKeys.has(key)) throw new Error(`${file}: kustomize feature "${key}" is not supported here`);

  const objects: K8sObject[] = [];
  for (const resource of kustomization.resources ?? []) {
    const path = join(dir, resource);
    if (!existsSync(path)) throw new Error(`${file}: resource ${resource} does not exist`);
    objects.push(...(statSync(path).isDirectory() ? renderTree(path) : readDocuments(path)));
  }

  for (const generator of kustomization.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const literal of generator.literals ?? []) {
      const eq = literal.indexOf('=');
      data[literal.slice(0, eq)] = literal.slice(eq + 1);
    }
    for (const source of generator.files ?? [])
      data[basename(source)] = readFileSync(join(dir, source), 'utf8');
    const existing = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === generator.name);
    if (generator.behavior === 'merge') {
      if (!existing) throw new Error(`${file}: configMapGenerator merges into missing ${generator.name}`);
      existing['data'] = { ...(existing['data'] as Record<string, string>), ...data };
    } else {
      if (existing) throw new Error(`${file}: ConfigMap ${generator.name} generated twice`);
      const generated: K8sObject = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: generator.name },
        data,
      };
      if (!kustomization.generatorOptions?.disableNameSuffixHash) needsHash.add(generated);
      objects.push(generated);
    }
  }

  for (const patch of kustomization.patches ?? []) {
    const text = patch.patch ?? (patch.path ? readFileSync(join(dir, patch.path), 'utf8') : undefined);
    if (text === undefined) throw new Error(`${file}: a patch needs patch or path`);
    const ops = parseYaml(text) as unknown;
    if (!Array.isArray(ops)) throw new Error(`${file}: only JSON 6902 patches are supported here`);
    const targets = objects.filter(
      (o) => o.kind === patch.target.kind && o.metadata.name === patch.target.name,
    );
    if (targets.length === 0)
      throw new Error(`${file}: patch target ${patch.target.kind}/${patch.target.name} not found`);
    for (const target of targets) applyJsonPatch(target, ops as JsonPatchOp[]);
  }

  if (kustomization.namespace)
    for (const object of objects)
      if (!clusterScoped.has(object.kind)) object.metadata.namespace = kustomization.namespace;

  for (const image of kustomization.images ?? [])
    for (const object of objects)
      for (const spec of podSpecs(object))
        for (const list of ['containers', 'initContainers'])
          for (const container of (spec[list] as Array<{ image?: string }> | undefined) ?? []) {
            if (!container.image || imageName(container.image) !== image.name) continue;
            const name = image.newName ?? image.name;
            container.image = image.digest
              ? `${name}@${image.digest}`
              : image.newTag
                ? `${name}:${image.newTag}`
                : container.image.replace(image.name, name);
          }
  return objects;
}

export const deployRoot = join(dirname(new URL(import.meta.url).pathname), '..', '..', '..', 'deploy');
