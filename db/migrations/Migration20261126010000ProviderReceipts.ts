import { Migration } from '@mikro-orm/migrations';

/**
 * Mail a provider received for us (contract 20, SES receipt notifications on POST /webhooks/sns).
 * SNS delivers a notice at least once, and the same notice may arrive on two requests at the same
 * time: the provider's message id is unique, so the second insert finds the first message instead
 * of storing (and processing) it again. Null for mail the SMTP listener took.
 */
export class Migration20261126010000ProviderReceipts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table inbound_messages add column provider text;
      alter table inbound_messages add column provider_message_id text;
      alter table inbound_messages add constraint inbound_messages_provider_pair
        check ((provider is null) = (provider_message_id is null));
      create unique index inbound_messages_provider_message_unique on inbound_messages (provider, provider_message_id)
        where provider_message_id is not null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists inbound_messages_provider_message_unique;
      alter table inbound_messages drop constraint if exists inbound_messages_provider_pair;
      alter table inbound_messages drop column if exists provider_message_id;
      alter table inbound_messages drop column if exists provider;
    `);
  }
}
