DROP VIEW IF EXISTS awa_queues;
