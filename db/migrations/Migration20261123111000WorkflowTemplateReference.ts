import { Migration } from '@mikro-orm/migrations';

/**
 * A SEND_EMAIL step's template reference was ON DELETE RESTRICT, checked at once: deleting a
 * project cascades to its templates before its workflow steps (each cascade is its own nested
 * statement), and the check then refused the whole project deletion. Checked at commit instead
 * (deferred), the cascade has removed the steps too by then; deleting a template that a step still
 * uses is refused as before (the API answers 409 first, naming the steps).
 */
export class Migration20261123111000WorkflowTemplateReference extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table workflow_steps drop constraint workflow_steps_template_id_fkey;
      alter table workflow_steps add constraint workflow_steps_template_id_fkey
        foreign key (template_id) references templates (id) on delete no action deferrable initially deferred;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table workflow_steps drop constraint workflow_steps_template_id_fkey;
      alter table workflow_steps add constraint workflow_steps_template_id_fkey
        foreign key (template_id) references templates (id) on delete restrict;
    `);
  }
}
