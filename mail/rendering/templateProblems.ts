/** What is wrong with a template, per field; the API answers these with a 422. */
export interface TemplateProblem {
  field: 'subject' | 'body';
  message: string;
}

/** A template that does not compile or render. Callers answer it with a 422 listing `problems`. */
export class TemplateRenderError extends Error {
  readonly problems: TemplateProblem[];

  constructor(problems: TemplateProblem[]) {
    super(`Template cannot be rendered: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
    this.name = 'TemplateRenderError';
    this.problems = problems;
  }
}
