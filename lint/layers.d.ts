// Types of lint/layers.js (plain JavaScript, so that eslint.config.js loads it on any Node).
import type { ESLint } from 'eslint';

export interface Layer {
  readonly name: string;
  readonly job: string;
  readonly paths: readonly string[];
}

export const layers: readonly Layer[];
export function layerOf(path: string): number | undefined;
export function upwardImport(root: string, importer: string, specifier: string): string | undefined;
export const layersPlugin: ESLint.Plugin;
