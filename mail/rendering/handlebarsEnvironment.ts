import Handlebars from 'handlebars';

/**
 * The one Handlebars environment Mailroom renders with: isolated from the global instance (so no
 * other code can register helpers into it), with only the built-in helpers plus `default`.
 * Templates compile with `knownHelpersOnly`, so `{{foo bar}}` is a compile-time problem instead
 * of a surprise at send time.
 */
export const handlebars = Handlebars.create();

/** Limits of one render, so a template cannot loop its way to minutes of CPU or gigabytes. */
export const MAX_LOOP_ITERATIONS = 100_000;
export const MAX_LOOP_OUTPUT_CHARS = 20_000_000;

/** `{{default value "fallback"}}`: the fallback when value is missing, null or the empty string. */
handlebars.registerHelper('default', function defaultHelper(...args: unknown[]) {
  args.pop(); // Handlebars' options object
  const [value, fallback] = args;
  return value === undefined || value === null || value === '' ? (fallback ?? '') : value;
});

/** `{{log}}` would let a template write to the server's console. */
handlebars.registerHelper('log', () => '');

interface LoopBudget {
  iterations: number;
  chars: number;
}

/** Rendering is synchronous, so one budget at a time is all there is. */
let budget: LoopBudget | null = null;

export class LoopBudgetExceeded extends Error {}

/**
 * `#each` (and `{{#list}}` sections, which go through it) counted: every iteration and the text
 * it produces are charged to the current render's budget. Nested loops are charged at each
 * level, which only makes the bound stricter.
 */
const builtInEach = handlebars.helpers.each as (this: unknown, context: unknown, options: Handlebars.HelperOptions) => string;
handlebars.registerHelper('each', function boundedEach(this: unknown, context: unknown, options: Handlebars.HelperOptions) {
  if (!options || typeof options.fn !== 'function') return builtInEach.call(this, context, options);
  const fn = options.fn;
  const counted = ((value: unknown, frame?: Handlebars.RuntimeOptions) => {
    if (budget && ++budget.iterations > MAX_LOOP_ITERATIONS) {
      throw new LoopBudgetExceeded(`loops may run at most ${MAX_LOOP_ITERATIONS} iterations in one email`);
    }
    const out = fn(value, frame);
    if (budget && (budget.chars += out.length) > MAX_LOOP_OUTPUT_CHARS) {
      throw new LoopBudgetExceeded(`loops may produce at most ${MAX_LOOP_OUTPUT_CHARS / 1_000_000} million characters in one email`);
    }
    return out;
  }) as Handlebars.TemplateDelegate;
  return builtInEach.call(this, context, { ...options, fn: counted });
});

export function withLoopBudget<T>(run: () => T): T {
  const previous = budget;
  budget = { iterations: 0, chars: 0 };
  try {
    return run();
  } finally {
    budget = previous;
  }
}

export const compileOptions = {
  strict: false,
  knownHelpersOnly: true,
  knownHelpers: { default: true },
} as const;

/** Prototype properties and methods stay unreachable from templates (Handlebars' default, stated). */
export const runtimeOptions: Handlebars.RuntimeOptions = {
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
};
