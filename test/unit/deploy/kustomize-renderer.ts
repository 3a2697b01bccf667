// A small kustomize renderer for tests, limited to the features deploy/k8s uses: `resources` (files and
// directories), `namespace`, `images`, `configMapGenerator` (literals, files, behavior create/merge, with
// generatorOptions.disableNameSuffixHash) and `patches` (JSON 6902 operations, inline or from a file, with a
// kind/name target). Anything else in a kustomization makes it throw: it never silently renders less than kustomize
// would. Where kubectl is installed, test/unit/deploy/k8s-manifests.test.ts compares its output with
// `kubectl kustomize`; CI machines without kubectl rely on this renderer alone.
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

/** Renders the kustomization in `dir` like `kubectl kustomize dir` (within the supported features). */
export function renderKustomization(dir: string): K8sObject[] {
  const file = join(dir, 'kustomization.yaml');
  const kustomization = parseYaml(readFileSync(file, 'utf8')) as Kustomization & Record<string, unknown>;
  for (const key of Object.keys(kustomization))
    if (!supportedKeys.has(key)) throw new Error(`${file}: kustomize feature "${key}" is not supported here`);

  const objects: K8sObject[] = [];
  for (const resource of kustomization.resources ?? []) {
    const path = join(dir, resource);
    if (!existsSync(path)) throw new Error(`${file}: resource ${resource} does not exist`);
    objects.push(...(statSync(path).isDirectory() ? renderKustomization(path) : readDocuments(path)));
  }

  for (const generator of kustomization.configMapGenerator ?? []) {
    if (!kustomization.generatorOptions?.disableNameSuffixHash && generator.behavior !== 'merge')
      throw new Error(`${file}: name suffix hashes are not supported here (set disableNameSuffixHash)`);
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
      objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data });
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
