'use strict';
/**
 * Whether a build is older than its inputs, for the builds `npm start` runs when stale (the server's
 * dist/ in build.cjs, the dashboard's dist/web/ in build-web.cjs): each writes a stamp file when it
 * succeeds, and is current while no input is newer than that stamp. Plain CommonJS, no dependencies.
 */
const fs = require('node:fs');
const path = require('node:path');

/** Newest modification time among the files under `dir` that `include(name, file)` accepts (0 if none). */
function newestFile(dir, include) {
  let newest = 0;
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestFile(file, include));
    else if (include(entry.name, file)) newest = Math.max(newest, fs.statSync(file).mtimeMs);
  }
  return newest;
}

/** Newest modification time among `files`; a missing one (no lock file yet) counts for nothing. */
function newestOf(files) {
  let newest = 0;
  for (const file of files) {
    try {
      newest = Math.max(newest, fs.statSync(file).mtimeMs);
    } catch {
      /* missing */
    }
  }
  return newest;
}

/** True when `stamp` exists and no input (`newestInput()`, a time) is newer. */
function stampIsCurrent(stamp, newestInput) {
  let built;
  try {
    built = fs.statSync(stamp).mtimeMs;
  } catch {
    return false;
  }
  return built >= newestInput();
}

module.exports = { newestFile, newestOf, stampIsCurrent };
