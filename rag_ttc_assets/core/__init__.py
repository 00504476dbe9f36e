"""Pure domain logic: typed functions over typed records. Never imports dagster."""
