"""One module per `kcm` subcommand; each defines NAME, HELP, add_arguments(parser) and main(args) -> int."""
