from toolbench._cli.main import main

main()
