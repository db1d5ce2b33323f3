from obspack.cli import main

main()
