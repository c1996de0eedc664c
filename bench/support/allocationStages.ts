import fs from 'node:fs';
import { stageOfFrame } from './cpuProfileStages';

/**
 * What the worker allocated per message, by stage of sending, from the sampling heap profile that
 * allocationSampling.cjs writes: each allocation counts for the nearest frame on its stack that
 * belongs to a known stage (cpuProfileStages.ts), and the busiest allocating functions are listed
 * with it. Garbage is what the scavenges and mark-compacts of the worker then spend their time on.
 */
interface HeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapProfileNode[];
}

export function printAllocationStages(file: string, messages: number): void {
  const { head } = JSON.parse(fs.readFileSync(file, 'utf8')) as { head: HeapProfileNode };
  const byStage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapProfileNode, inherited: string) => {
    const { url, functionName, lineNumber } = node.callFrame;
    const stage = stageOfFrame(url, functionName) ?? inherited;
    total += node.selfSize;
    byStage.set(stage, (byStage.get(stage) ?? 0) + node.selfSize);
    const name = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, stage);
  };
  walk(head, 'other (Node internals, unattributed callbacks)');
  const kb = (bytes: number) => (bytes / 1024 / messages).toFixed(1).padStart(7);
  console.log(`\n  worker allocations from the send call to its exit: ${kb(total)} KB per message sent, by stage`);
  for (const [stage, bytes] of [...byStage].sort((a, b) => b[1] - a[1]))
    console.log(`    ${stage.padEnd(48)} ${kb(bytes)}  (${((100 * bytes) / total).toFixed(1)} %)`);
  console.log(`  the functions that allocate most, KB per message`);
  for (const [name, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`    ${kb(bytes)}  ${name}`);
}
