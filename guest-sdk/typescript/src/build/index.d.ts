// Types of @atrium/sdk/build: the build tool as a library.

export class BuildError extends Error {
  /** Lines printed before the message (manifest findings, bundling errors). */
  lines: string[];
}
export interface BuildOptions {
  /** The project directory (default `.`). */
  project?: string;
  /** The component to write (default `<project>/build/app.wasm`). */
  out?: string;
  /** The WIT directory (default: ATRIUM_WIT, the package's wit/, the source tree's wit/). */
  wit?: string;
}
export interface BuildResult {
  out: string;
  size: number;
  seconds: number;
  /** Manifest warnings, formatted like `atrium lint`. */
  warnings: string[];
  versions: Record<string, string>;
}
/** Builds the project into a component. */
export function build(options?: BuildOptions): Promise<BuildResult>;
/** The command line; resolves to the exit code. */
export function main(argv: string[], io?: { stdout?: { write(s: string): unknown }; stderr?: { write(s: string): unknown } }): Promise<number>;
/** A finding as `atrium lint` prints it. */
export function formatFinding(finding: { file: string; path: string; code: string; severity: string; message: string; line?: number; column?: number }, file?: string): string;
