/**
 * Preloaded into an API or worker process by a benchmark (`node --require
 * ./bench/support/countStatements.cjs …`): counts the statements the process sends to PostgreSQL
 * through `pg`, by the tables they name. On SIGUSR2 it prints the counts so far as one JSON line
 * on stdout ({"msg":"statement counts","seq":n,"counts":{…}}), which the benchmark reads the way
 * tests read log lines. Benchmarks only: nothing in the product loads it.
 */
const pg = require('pg');

const counts = { total: 0 };
const categories = [
  ['workflow_executions', /\bworkflow_executions\b/],
  ['workflows', /\bworkflows\b|\bworkflow_steps\b/],
  ['events', /\bevents\b/],
  ['contacts', /\bcontacts\b/],
  ['projects', /\bprojects\b/],
  ['rate_limit', /mailroom_rate_limit_take/],
];

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, ...rest) {
  const text = typeof config === 'string' ? config : config && typeof config.text === 'string' ? config.text : '';
  if (text) {
    counts.total++;
    for (const [name, pattern] of categories) if (pattern.test(text)) counts[name] = (counts[name] ?? 0) + 1;
  }
  return query.call(this, config, ...rest);
};

let seq = 0;
process.on('SIGUSR2', () => {
  process.stdout.write(`${JSON.stringify({ msg: 'statement counts', seq: ++seq, counts })}\n`);
});
