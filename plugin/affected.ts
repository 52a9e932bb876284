// How an edit of a config file reaches `nx affected` and `nx show projects --affected`.
//
// Nx decides which projects a change touches from the changed files' paths alone: a file
// under a project's root touches that project, and a `{workspaceRoot}/...` file input of
// any of a project's targets touches it (Nx 23's getImplicitlyTouchedProjects, Nx 24's
// native locator; nothing reads inside a YAML file, and Nx 24's field-filtered inputs
// read JSON only). The tune and compile keys take the part of the config a network uses
// as an option (targets.ts settingsDigest), never the file, so that a comment or another
// network's entry keeps their caches. The file is therefore an input of benchmark, the
// target Nx never caches: every network of an edited config file is touched, and its
// tune and compile run again only where their key changed (the others are cache hits).
// A network in a file of its own inside its project folder, extending the workspace's
// targets and budgets (`extends`), is the one project an edit of that file touches; an
// edit of the extended file touches every network that extends it.

import type { TargetConfiguration } from '@nx/devkit';

type Input = NonNullable<TargetConfiguration['inputs']>[number];

/**
 * benchmark's inputs: Nx's defaults for a target without inputs (the project's files and
 * its dependencies'), the config file that declares the network, and the file it extends.
 */
export function benchmarkInputs(configRel: string, baseRel?: string): Input[] {
  return ['default', '^default', `{workspaceRoot}/${configRel}`, ...(baseRel ? [`{workspaceRoot}/${baseRel}`] : [])];
}
